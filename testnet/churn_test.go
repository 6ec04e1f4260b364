package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestChurn: during a 200-task workload on 6 nodes, two edge nodes leave
// and rejoin every couple of seconds, alternately gracefully and with a
// kill: every task succeeds exactly once and no accepted job is lost.
func TestChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("churn takes ~40 s")
	}
	res := func(i int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" }
	net := New(t, 6, Options{Resources: res, Topology: Star})
	net.WaitConverged(10 * time.Second)
	var ids []string
	for j := 0; j < 20; j++ {
		var tasks []string
		for k := 0; k < 10; k++ {
			tasks = append(tasks, fmt.Sprintf(`{"name": "t%d", "command": ["sleep", "1.5"], "resources": {"cpu": 1}}`, k))
		}
		id, err := net.Node(j % 4).Submit(fmt.Sprintf(`{"name": "churn-%d", "tasks": [%s]}`, j, strings.Join(tasks, ",")))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The two edge nodes leave every ~1.7 s, alternately drained and
	// killed, and come back 0.7 s later; the script runs from this loop.
	script := net.Script(Churn([]int{4, 5}, 1700*time.Millisecond, 700*time.Millisecond, 10)...)
	deadline := time.Now().Add(120 * time.Second)
	pending := map[string]int{} // job → its manager's index
	for j, id := range ids {
		pending[id] = j % 4
	}
	steps := 0
	for len(pending) > 0 && time.Now().Before(deadline) {
		steps = script.Run()
		for id, mgr := range pending { // one job per round keeps the churn on time
			s, err := net.Node(mgr).Status(id)
			if err == nil && (s.State == "succeeded" || s.State == "failed" || s.State == "cancelled") {
				if s.State != "succeeded" {
					t.Errorf("job %s ended %s: %s", id, s.State, s.Reason)
				}
				delete(pending, id)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(pending) > 0 {
		t.Fatalf("%d jobs unfinished after 120 s", len(pending))
	}
	// Exactly one success per task, from the managers' records.
	tasks := 0
	for j, id := range ids {
		rec, ok := net.Node(j % 4).JobRecord(id)
		if !ok {
			t.Fatalf("manager lost job %s", id)
		}
		for _, tr := range rec.Tasks {
			tasks++
			ok := 0
			for _, h := range tr.History {
				if h.State == "succeeded" {
					ok++
				}
			}
			if ok != 1 {
				t.Fatalf("%s succeeded %d times: %+v", tr.Key, ok, tr.History)
			}
		}
	}
	t.Logf("%d tasks each succeeded exactly once across %d scripted leaves and rejoins during the workload", tasks, steps)
}
