package market

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

// TestDrain: a draining node hands back queued and running work, which
// finishes elsewhere without counting failures.
func TestDrain(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(2), cpuNode(2))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 3 * time.Second }
	var tasks []spec.Task
	for i := 0; i < 6; i++ {
		tasks = append(tasks, task(fmt.Sprintf("t%d", i), 1000))
	}
	c.submit(0, "j", job("d", tasks...))
	c.until(5*time.Second, "tasks running", func() bool { return len(c.starts) == 4 })
	c.nodes[1].Drain(c.now)
	c.drain()
	c.until(60*time.Second, "job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	if !c.nodes[1].Idle() {
		t.Fatal("drained node still holds tasks")
	}
	for _, tr := range c.job(0, "j").Tasks {
		if tr.Failures != 0 || tr.Node == "n1" && tr.History[len(tr.History)-1].Started.After(t0.Add(time.Second)) {
			t.Fatalf("%s: failures %d node %s", tr.Key, tr.Failures, tr.Node)
		}
	}
	for _, s := range c.starts {
		if s.node == "n1" && s.at.After(t0.Add(time.Second)) {
			t.Fatalf("drained node started %s after draining", s.key)
		}
	}
	if !c.nodes[1].Draining() || !c.nodes[1].SoftState().Draining {
		t.Fatal("drained node does not say it is draining")
	}

	// Undrained, it takes work again: a second job of more tasks than n2
	// holds at once runs partly on n1.
	c.nodes[1].Undrain(c.now)
	c.drain()
	if c.nodes[1].Draining() || c.nodes[1].SoftState().Draining {
		t.Fatal("undrained node still says it is draining")
	}
	undrained := c.now
	c.submit(0, "k", job("e", tasks...))
	c.until(60*time.Second, "second job to succeed", func() bool { return c.job(0, "k").State == JobSucceeded })
	ran := 0
	for _, s := range c.starts {
		if s.node == "n1" && !s.at.Before(undrained) {
			ran++
		}
	}
	if ran == 0 {
		t.Fatal("undrained node ran none of the second job's tasks")
	}
}
