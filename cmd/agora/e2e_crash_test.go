package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestKill9ExactlyOnce (issues 22 and 41, done-when 3): a node that
// manages and runs 20 jobs, with default flags, is killed with SIGKILL
// while their tasks run, and restarted after an outage of 2, 7, 30 or
// 120 s. Each task leaves a "start" marker, sleeps 4 s and leaves an
// "end" marker. After 2 s the tasks still run: the restarted node
// re-attaches to them instead of killing them and running them again
// (before, every one of the 20 started twice). After the longer outages
// they finished while the node was down: it reports them from the exit
// status their wrappers left. Every job succeeds with one attempt, and
// each command starts and ends exactly once.
func TestKill9ExactlyOnce(t *testing.T) {
	for _, down := range []time.Duration{2 * time.Second, 7 * time.Second, 30 * time.Second, 120 * time.Second} {
		t.Run(fmt.Sprintf("down %v", down), func(t *testing.T) {
			data := t.TempDir()
			// Each start and end leaves a marker file of its own: the
			// tasks run under user IDs of their own (default flags, as
			// root), which cannot append to one another's file.
			marks := sharedDir(t)
			p := startNode(t, data)
			var ids []string
			for i := range 20 {
				cmd := fmt.Sprintf("mktemp %[1]s/start.XXXXXX >/dev/null; sleep 4; mktemp %[1]s/end.XXXXXX >/dev/null", marks)
				spec := writeFile(t, fmt.Sprintf("j%d.json", i), fmt.Sprintf(
					`{"name": "once-%d", "tasks": [{"name": "t", "command": ["sh", "-c", %q], "resources": {"cpu": "50m"}, "retries": 0}]}`, i, cmd))
				o, e, code := agora(t, "submit", "--api", p.api, "--json", spec)
				if code != 0 {
					t.Fatalf("submit: %d %s %s", code, o, e)
				}
				ids = append(ids, jobID(o))
			}
			lines := func(w string) int {
				m, _ := filepath.Glob(filepath.Join(marks, w+".*"))
				return len(m)
			}
			waitfor.Every(t, 15*time.Second, apiPoll, "20 tasks to start", func() bool { return lines("start") == 20 })
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			time.Sleep(down)
			p = startNode(t, data)
			waitfor.Every(t, 60*time.Second, apiPoll, "20 jobs to succeed", func() bool {
				for _, id := range ids {
					o, _, code := agora(t, "status", "--api", p.api, "--json", id)
					if code != 0 || !strings.Contains(o, `"state": "succeeded"`) {
						return false
					}
				}
				return true
			})
			time.Sleep(500 * time.Millisecond)
			t.Logf("%v down: %d starts, %d ends", down, lines("start"), lines("end"))
			if s, e := lines("start"), lines("end"); s != 20 || e != 20 {
				t.Fatalf("%d starts and %d ends after a kill -9 and %v down, want 20 and 20\n%s", s, e, down, tail(p.log.String(), 40))
			}
			for _, id := range ids {
				o, _, _ := agora(t, "status", "--api", p.api, "--json", id)
				var js struct {
					Tasks []struct{ Attempts int } `json:"tasks"`
				}
				if json.Unmarshal([]byte(o), &js) != nil || len(js.Tasks) != 1 || js.Tasks[0].Attempts != 1 {
					t.Fatalf("job %s ran again after %v down: %s", id, down, o)
				}
			}
		})
	}
}
