package market

import (
	"strings"
	"testing"
	"time"
)

// TestExitedWhileDown (issue 22): a restarted node whose executor found
// that an attempt finished while the node was down (the exit status its
// shell left) applies that exit when it restores the job — succeeded
// once, or failed by its retries — and does not place it again. An exit
// of another epoch is not taken: the attempt is lost and placed again.
func TestExitedWhileDown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    int
		epoch   uint64 // added to the running attempt's epoch
		state   JobState
		restart bool // the attempt is placed again
	}{
		{"succeeded", 0, 0, JobSucceeded, false},
		{"failed", 3, 0, JobFailed, false},
		{"another epoch", 0, 1, JobRunning, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, cpuNode(4))
			c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Hour }
			js := job("j", task("t", 1000))
			js.Tasks[0].Retries = 0
			if err := c.nodes[0].Submit(c.now, "j-1", js); err != nil {
				t.Fatal(err)
			}
			c.until(10*time.Second, "the task to run", func() bool { return c.job(0, "j-1").Tasks[0].State == TaskRunning })
			rec := c.job(0, "j-1")
			tr := rec.Tasks[0]

			// The node restarts on its store: a new market, the record and
			// the executor's finding.
			cfg := c.nodes[0].Config()
			cfg.Solo = true
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := c.now.Add(5 * time.Second)
			out := &DataRef{Manifest: strings.Repeat("9", 64), Bytes: 7, Holders: []NodeID{"n0"}}
			m.Reclaim(now, []JobRecord{rec}, nil, TaskExit{Key: tr.Key, Epoch: tr.Epoch + tc.epoch, ExitCode: tc.code, Reason: "exit status (finished while the node was down)", Time: now, Outputs: out})
			starts := 0
			for range 200 {
				now = now.Add(50 * time.Millisecond)
				m.Tick(now)
				for _, e := range m.Ready() {
					if st, ok := e.(StartTask); ok && st.Task.Key == tr.Key {
						starts++
					}
				}
			}
			j, ok := m.Job("j-1")
			if !ok {
				t.Fatal("the job was not restored")
			}
			if j.State != tc.state {
				t.Fatalf("job %s after the restart, want %s (%+v)", j.State, tc.state, j.Tasks[0])
			}
			if kept := j.Tasks[0].Outputs != nil && j.Tasks[0].Outputs.Manifest == out.Manifest; kept != (tc.state == JobSucceeded) {
				t.Fatalf("outputs after the restart: %+v", j.Tasks[0].Outputs)
			}
			if (starts > 0) != tc.restart {
				t.Fatalf("%d starts of the attempt after the restart (placed again: %v)", starts, tc.restart)
			}
			if !tc.restart && j.Tasks[0].Attempts != 1 {
				t.Fatalf("%d attempts, want the one that finished", j.Tasks[0].Attempts)
			}
		})
	}
}

// TestResumeAfterRestart (issue 41): a restarted node whose executor
// re-attached to an attempt still running (market.Resume) keeps it
// running — no new start — and takes its exit as the replica's, whether
// it ends after the job is restored or while the job is still held back
// by Reclaim. Without Resume the attempt is lost and placed again.
func TestResumeAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resume  bool
		exitAt  time.Duration // after the restart
		restart bool          // the attempt is placed again
	}{
		{"ends after the restore", true, 8 * time.Second, false},
		{"ends while held", true, 100 * time.Millisecond, false},
		{"not resumed", false, 8 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, cpuNode(4))
			c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Hour }
			js := job("j", task("t", 1000))
			js.Tasks[0].Retries = 0
			if err := c.nodes[0].Submit(c.now, "j-1", js); err != nil {
				t.Fatal(err)
			}
			var started StartTask
			c.until(10*time.Second, "the task to run", func() bool { return c.job(0, "j-1").Tasks[0].State == TaskRunning })
			rec := c.job(0, "j-1")
			tr := rec.Tasks[0]
			started = StartTask{Task: TaskSpec{TaskOffer: TaskOffer{Key: tr.Key, Request: js.Tasks[0].Request}, Epoch: tr.Epoch, Attempt: tr.Attempts}, Manager: "n0"}

			cfg := c.nodes[0].Config()
			cfg.Solo = true
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := c.now.Add(2 * time.Second)
			if tc.resume {
				m.Resume(now, []Resumed{{Task: started.Task, Alloc: started.Alloc, Manager: started.Manager, Started: c.now}})
			}
			m.Reclaim(now, []JobRecord{rec}, nil)
			starts, exited := 0, false
			for range 400 {
				now = now.Add(50 * time.Millisecond)
				if !exited && now.Sub(c.now.Add(2*time.Second)) >= tc.exitAt && tc.resume {
					m.TaskExited(now, tr.Key, tr.Epoch, 0, "exit status 0", nil)
					exited = true
				}
				m.Tick(now)
				for _, e := range m.Ready() {
					switch x := e.(type) {
					case StartTask:
						if x.Task.Key == tr.Key {
							starts++
						}
					case Send:
						if x.To == m.Config().Self {
							m.Step(now, x.To, x.Msg) // this node's messages to itself
						}
					}
				}
			}
			j, ok := m.Job("j-1")
			if !ok {
				t.Fatal("the job was not restored")
			}
			if (starts > 0) != tc.restart {
				t.Fatalf("%d starts after the restart (placed again: %v); job %s %+v", starts, tc.restart, j.State, j.Tasks[0])
			}
			if !tc.restart && (j.State != JobSucceeded || j.Tasks[0].Attempts != 1) {
				t.Fatalf("job %s with %d attempts, want succeeded with the one re-attached (%+v)", j.State, j.Tasks[0].Attempts, j.Tasks[0])
			}
		})
	}
}
