package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestPredictedStart (issue 26, done-when 2, real nodes): on a node with
// one core that has learnt a job type's runtime (three runs of a 1 s
// task), a second task of that type queues behind a first; its status
// names the node it is queued on and the start its contractor predicted,
// and it starts within the runtime prediction's error of it (the first
// task's runtime against what was learnt, here a few tens of
// milliseconds, plus 0.5 s for the report to travel and be polled). A
// task no node fits names the unmet requirement and the closest node.
func TestPredictedStart(t *testing.T) {
	one := func(int) string { return "cpu: 1\nmemory: 4GiB\ngpus: []\n" }
	net := New(t, 1, Options{Resources: one})
	nd := net.Node(0)
	run := func(name string) string {
		id, err := nd.Submit(fmt.Sprintf(`{"name": %q, "type": "sleeper", "tasks": [{"name": "t", "command": ["sleep", "1"], "resources": {"cpu": 1}}]}`, name))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for i := 0; i < 3; i++ {
		id := run(fmt.Sprintf("warm-%d", i))
		waitfor.Cond(t, 20*time.Second, "a warm-up run", func() bool { st, err := nd.Status(id); return err == nil && st.State == "succeeded" })
	}
	first, second := run("first"), run("second")
	var predicted time.Time
	var waiting string
	waitfor.Cond(t, 10*time.Second, "the second task to be queued with a predicted start", func() bool {
		st, err := nd.Status(second)
		if err != nil || st.Tasks[0].State != "awarded" || st.Tasks[0].PredictedStart == "" {
			return false
		}
		predicted, _ = time.Parse(time.RFC3339Nano, st.Tasks[0].PredictedStart)
		waiting = st.Tasks[0].Waiting
		return true
	})
	if !strings.HasPrefix(waiting, "queued on "+nd.ID().String()) {
		t.Fatalf("the queued task waits %q", waiting)
	}
	waitfor.Cond(t, 10*time.Second, "the second task to start", func() bool {
		st, err := nd.Status(second)
		return err == nil && st.Tasks[0].Started != ""
	})
	st2, _ := nd.Status(second)
	st1, _ := nd.Status(first)
	actual, _ := time.Parse(time.RFC3339Nano, st2.Tasks[0].Started)
	s1, _ := time.Parse(time.RFC3339Nano, st1.Tasks[0].Started)
	f1, _ := time.Parse(time.RFC3339Nano, st1.Tasks[0].Finished)
	runtimeErr := (f1.Sub(s1) - time.Second).Abs() // the first task's runtime against the learnt ~1 s
	off := actual.Sub(predicted)
	t.Logf("predicted start %s, actual %s: %v off; the first task ran %v (runtime prediction error about %v)",
		predicted.Format("15:04:05.000"), actual.Format("15:04:05.000"), off.Round(time.Millisecond), f1.Sub(s1).Round(time.Millisecond), runtimeErr.Round(time.Millisecond))
	if off.Abs() > runtimeErr+500*time.Millisecond {
		t.Fatalf("started %v off its predicted start; want within %v", off, runtimeErr+500*time.Millisecond)
	}
	big, err := nd.Submit(`{"name": "big", "tasks": [{"name": "huge", "command": ["true"], "resources": {"cpu": 8}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the big task's last reason: %q", last)
		}
	}()
	waitfor.Cond(t, 10*time.Second, "the big task's reason", func() bool {
		st, err := nd.Status(big)
		if err != nil {
			return false
		}
		w := st.Tasks[0].Waiting + st.Tasks[0].Reason
		last = w
		return strings.Contains(w, "cpu") && strings.Contains(w, "closest peer "+nd.ID().String())
	})
	t.Logf("the big task: %s", last)
}
