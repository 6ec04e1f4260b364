package market

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

// stealScenario queues 60 one-second tasks on n0 while the other three
// nodes are cut off, then lets them back in, and returns the makespan.
func stealScenario(t *testing.T, steal bool) time.Duration {
	c := newCluster(t, cpuNode(4), cpuNode(4), cpuNode(4), cpuNode(4))
	for _, m := range c.nodes {
		m.cfg.NoSteal = !steal
	}
	for _, id := range c.ids[1:] {
		c.cut[id] = true
	}
	for _, m := range c.nodes[:1] {
		for id := range m.view {
			m.PeerGone(c.now, id)
		}
	}
	var tasks []spec.Task
	for i := 0; i < 60; i++ {
		tasks = append(tasks, task(fmt.Sprintf("t%02d", i), 1000))
	}
	c.submit(0, "j", job("q", tasks...))
	start := c.now
	c.until(30*time.Second, "all tasks placed on n0", func() bool {
		for _, tr := range c.job(0, "j").Tasks {
			if tr.State == TaskPending {
				return false
			}
		}
		return true
	})
	for id := range c.cut {
		delete(c.cut, id)
	}
	c.until(120*time.Second, "job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	succeededOnce(t, c.job(0, "j"))
	return c.now.Sub(start)
}

func TestStealingShortensMakespan(t *testing.T) {
	off := stealScenario(t, false)
	on := stealScenario(t, true)
	t.Logf("makespan without stealing %v, with %v (%.0f%% shorter)", off, on, 100*(1-on.Seconds()/off.Seconds()))
	if on.Seconds() > 0.7*off.Seconds() {
		t.Fatalf("stealing makespan %v is not 30%% shorter than %v", on, off)
	}
}
