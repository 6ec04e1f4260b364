package market

import (
	"strings"
	"testing"
	"time"
)

// TestPartitionedExecutor: the executor is cut off long enough for its
// lease to lapse; the task runs again elsewhere with a new epoch; when the
// partition heals the stale executor's result is rejected and the task
// has exactly one success.
func TestPartitionedExecutor(t *testing.T) {
	// The manager n0 has no CPU of its own, so the executor is remote.
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(4))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 10 * time.Second }
	c.submit(0, "j", job("p", task("t", 1000)))
	c.until(5*time.Second, "task to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	first := c.job(0, "j").Tasks[0].Node
	c.cut[first] = true
	c.until(20*time.Second, "task to run elsewhere", func() bool {
		tr := c.job(0, "j").Tasks[0]
		return tr.State == TaskRunning && tr.Node != first
	})
	// Heal while the stale executor still runs its copy: its next report
	// carries the old epoch.
	c.until(10*time.Second, "heal time", func() bool { return c.now.Sub(t0) > 8*time.Second })
	delete(c.cut, first)
	c.until(30*time.Second, "job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	j := c.job(0, "j")
	ok := 0
	for _, h := range j.Tasks[0].History {
		if h.State == TaskSucceeded {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d successful attempts, want exactly 1: %+v", ok, j.Tasks[0].History)
	}
	if j.Tasks[0].Epoch < 2 {
		t.Fatalf("epoch %d, want a new epoch after the lease lapsed", j.Tasks[0].Epoch)
	}
	if !strings.Contains(c.eventLog(), "lease lapsed") || !strings.Contains(c.eventLog(), "stale report") {
		t.Fatalf("events lack the lapse or the stale rejection:\n%s", c.eventLog())
	}
}
