package market

import (
	"testing"
	"time"
)

// TestManagerFailover: the manager disappears while its task runs on n1;
// n2 adopts the job from its replica, n1 re-homes, and the job completes
// with exactly one run.
func TestManagerFailover(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(0))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 8 * time.Second }
	c.submit(0, "j", job("f", task("t", 1000)))
	c.until(5*time.Second, "task to run on n1", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	rec := c.job(0, "j")
	c.cut["n0"] = true // the manager is gone for good
	c.until(5*time.Second, "a moment", func() bool { return c.now.Sub(t0) > 4*time.Second })
	c.nodes[2].Adopt(c.now, rec)
	c.nodes[1].Rehome(c.now, "j", "n2")
	c.drain()
	c.until(30*time.Second, "job to succeed under n2", func() bool { return c.job(2, "j").State == JobSucceeded })
	if len(c.starts) != 1 {
		t.Fatalf("%d runs, want 1 (the executor kept running under the new manager)", len(c.starts))
	}
}
