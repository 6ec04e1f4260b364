package testnet

import (
	"strings"
	"testing"
	"time"
)

// TestManagerKilledAfterSubmit: the node a job was submitted to is killed
// right after the submit; the job still completes, and status and logs
// work from a third node.
func TestManagerKilledAfterSubmit(t *testing.T) {
	res := func(i int) string {
		if i == 0 {
			return "cpu: 0\nmemory: 1GiB\ngpus: []\n"
		}
		return "cpu: 2\nmemory: 4GiB\ngpus: []\n"
	}
	net := New(t, 4, Options{Resources: res, Topology: Star})
	net.WaitConverged(10 * time.Second)
	id, err := net.Node(0).Submit(`{"name": "orphan", "tasks": [{"name": "a", "command": ["sh", "-c", "sleep 2; echo first done"]}, {"name": "b", "after": ["a"], "command": ["sh", "-c", "echo second done"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	first := net.Node(0).ID().String()
	net.Kill(0)
	killed := time.Now()
	var third *Node
	for _, nd := range net.Up() {
		third = nd
	}
	var state string
	WaitFor(t, 40*time.Second, "the job to complete without its first manager", func() bool {
		s, err := third.Status(id)
		if err == nil {
			state = s.State
		}
		return state == "succeeded" || state == "failed"
	})
	t.Logf("job %s %v after its manager was killed", state, time.Since(killed).Round(time.Millisecond))
	if state != "succeeded" {
		t.Fatalf("job ended %s", state)
	}
	s, err := third.Status(id)
	if err != nil || s.Manager == first {
		t.Fatalf("status from a third node: %+v %v", s, err)
	}
	lg, err := third.Logs(id, "")
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, e := range lg.Logs {
		all += e.Data
	}
	if !strings.Contains(all, "first done") || !strings.Contains(all, "second done") {
		t.Fatalf("logs from a third node: %+v", lg)
	}
}
