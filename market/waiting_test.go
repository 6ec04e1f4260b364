package market

import (
	"strings"
	"testing"
	"time"
)

// TestWaitingReasons (issue 26, done-when 2, in virtual time): a replica
// waiting for a dependency names it; one no node fits names the unmet
// requirement and the closest peer; one queued behind another on its node
// names the node and carries the start its winning bid predicted, which
// comes true within the runtime prediction's error.
func TestWaitingReasons(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(1), cpuNode(4))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 4 * time.Second }
	c.submit(0, "dag", job("dag", task("a", 1000), task("b", 1000, "a")))
	c.submit(0, "big", job("big", task("huge", 8000)))
	c.until(5*time.Second, "a to run", func() bool { return c.job(0, "dag").Tasks[0].State == TaskRunning })
	if w := c.job(0, "dag").Tasks[1].Waiting; w != "waiting for its dependencies: a (0 of 1 done)" {
		t.Fatalf("b waits %q", w)
	}
	c.until(5*time.Second, "the big task's refusals", func() bool {
		return strings.HasPrefix(c.job(0, "big").Tasks[0].Waiting, "no node fits")
	})
	if w := c.job(0, "big").Tasks[0].Waiting; !strings.Contains(w, "cpu") || !strings.Contains(w, "closest peer n2") {
		t.Fatalf("the big task waits %q: want the unmet cpu requirement and the closest peer n2", w)
	}
	if rec, _ := c.nodes[0].Job("dag"); rec.Tasks[0].Waiting != "" {
		t.Fatalf("a running replica waits %q", rec.Tasks[0].Waiting)
	}
	// Teach n1 the type's runtime, then queue two tasks on its one core.
	c2 := newCluster(t, cpuNode(0), cpuNode(1))
	c2.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 4 * time.Second }
	for i := 0; i < 3; i++ {
		id := "warm" + string(rune('0'+i))
		c2.submit(0, id, job("q", task("t", 1000)))
		c2.until(10*time.Second, "a warm-up run", func() bool { return c2.job(0, id).State == JobSucceeded })
	}
	c2.submit(0, "first", job("q", task("t", 1000)))
	c2.submit(0, "second", job("q", task("t", 1000)))
	c2.until(5*time.Second, "second to be queued on n1", func() bool {
		tk := c2.job(0, "second").Tasks[0]
		return tk.State == TaskAwarded && !tk.PredictedStart.IsZero()
	})
	tk := c2.job(0, "second").Tasks[0]
	if !strings.HasPrefix(tk.Waiting, "queued on n1") {
		t.Fatalf("second waits %q", tk.Waiting)
	}
	predicted := tk.PredictedStart
	c2.until(10*time.Second, "second to start", func() bool { return c2.job(0, "second").Tasks[0].State == TaskRunning })
	actual := c2.job(0, "second").Tasks[0].Started
	if d := actual.Sub(predicted); d < -500*time.Millisecond || d > 500*time.Millisecond {
		t.Fatalf("second started %v after its predicted start (the runtime is learned exactly here: want within 0.5 s)", d)
	}
}
