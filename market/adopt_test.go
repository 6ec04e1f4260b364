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
	c.nodes[2].adoptAt(c.now, rec)
	c.nodes[1].rehomeAt(c.now, "j", "n2")
	c.drain()
	c.until(30*time.Second, "job to succeed under n2", func() bool { return c.job(2, "j").State == JobSucceeded })
	if len(c.starts) != 1 {
		t.Fatalf("%d runs, want 1 (the executor kept running under the new manager)", len(c.starts))
	}
}

// TestAdoptCatchesUpUnreplicatedAward: the adopted record was replicated
// before the old manager awarded the task, so it shows the task pending:
// in the old manager's round (same epoch as the award), or from before
// the round (an older epoch). The executor's report, with the award's
// epoch, reaches the adopter within the grace: the adopter takes the award
// over instead of placing the task again, and the task runs once.
func TestAdoptCatchesUpUnreplicatedAward(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale func(*JobRecord)
	}{
		{"replicated during the round", func(*JobRecord) {}},
		{"replicated before the round", func(r *JobRecord) { r.Tasks[0].Epoch-- }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(0))
			c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 8 * time.Second }
			c.submit(0, "j", job("f", task("t", 1000)))
			stale := c.job(0, "j") // replicated before the award
			if stale.Tasks[0].State != TaskPending {
				t.Fatalf("record at submit: task %s", stale.Tasks[0].State)
			}
			tc.stale(&stale)
			c.until(5*time.Second, "task to run on n1", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
			c.cut["n0"] = true
			c.nodes[2].adoptAt(c.now, stale)
			c.drain()
			c.step()
			c.nodes[1].rehomeAt(c.now, "j", "n2")
			c.drain()
			c.until(30*time.Second, "job to succeed under n2", func() bool { return c.job(2, "j").State == JobSucceeded })
			if len(c.starts) != 1 {
				t.Fatalf("%d runs, want 1 (the adopter took over the unreplicated award):\n%s", len(c.starts), c.eventLog())
			}
			tk := c.job(2, "j").Tasks[0]
			if tk.Node != "n1" || tk.Attempts != 1 {
				t.Fatalf("task on %s after %d attempts, want n1 after 1", tk.Node, tk.Attempts)
			}
		})
	}
}

// TestAdoptWaitsBeforePlacingPending: a replica the adopted record shows
// pending, and no executor reports, is placed once AdoptGrace has passed,
// not before.
func TestAdoptWaitsBeforePlacingPending(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(0))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Second }
	c.cut["n0"] = true // never places anything
	c.submit(0, "j", job("f", task("t", 1000)))
	rec := c.job(0, "j")
	adopted := c.now
	c.nodes[2].adoptAt(c.now, rec)
	c.until(30*time.Second, "job to succeed under n2", func() bool { return c.job(2, "j").State == JobSucceeded })
	if len(c.starts) != 1 {
		t.Fatalf("%d runs, want 1", len(c.starts))
	}
	grace := c.nodes[2].Config().AdoptGrace
	if at := c.starts[0].at.Sub(adopted); at < grace {
		t.Fatalf("placed %v after the adoption, inside the %v grace", at, grace)
	}
}
