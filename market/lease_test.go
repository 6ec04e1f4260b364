package market

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
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
	succeededOnce(t, j)
	if j.Tasks[0].Epoch < 2 {
		t.Fatalf("epoch %d, want a new epoch after the lease lapsed", j.Tasks[0].Epoch)
	}
	if !strings.Contains(c.eventLog(), "lease lapsed") || !strings.Contains(c.eventLog(), "stale report") {
		t.Fatalf("events lack the lapse or the stale rejection:\n%s", c.eventLog())
	}
}

// TestSupersededQueuedContractDropped: a node that still queues a replica
// at epoch 1 when its manager calls for bids at epoch 2 (the lease lapsed
// while the node was slow to renew it) drops the stale contract and bids,
// instead of refusing with "already holds this task" until the task fails
// for want of bidders.
func TestSupersededQueuedContractDropped(t *testing.T) {
	for _, tc := range []struct {
		epoch uint64
		bid   bool
	}{{1, false}, {2, true}} {
		m, err := New(Config{Self: "n", Capacity: cpuNode(1)})
		if err != nil {
			t.Fatal(err)
		}
		m.now = t0
		m.con.free.CPU = 0 // busy with work not modelled here: the contract stays queued
		k := &contract{spec: spec1("j", resource.Request{CPU: 1000}), manager: "mgr", runtime: time.Second}
		k.spec.Epoch = 1
		m.con.enqueue(k)
		m.Step(t0, "mgr", CFP{Auction: AuctionID{Key: k.spec.Key, Epoch: tc.epoch}, Manager: "mgr", Task: k.spec.TaskOffer})
		var bid, nobid bool
		for _, e := range m.Ready() {
			if s, ok := e.(Send); ok {
				switch s.Msg.(type) {
				case Bid:
					bid = true
				case NoBid:
					nobid = true
				}
			}
		}
		if bid != tc.bid || nobid == tc.bid {
			t.Errorf("CFP at epoch %d: bid %v, no-bid %v; want bid %v", tc.epoch, bid, nobid, tc.bid)
		}
		if queued := m.QueueLen() == 1; queued == tc.bid {
			t.Errorf("CFP at epoch %d: stale contract still queued = %v", tc.epoch, queued)
		}
	}
}

// TestManagerPaused: a manager that stood still (its process stopped or
// starved of CPU) for longer than a lease, told so on waking, judges no
// lease by the silence it did not hear: the reports queued meanwhile are
// seen first, and the task runs once, at its first epoch. Untold, it
// places the task again (the failure this guards against). An executor
// that really went silent meanwhile is still judged lapsed, a pause
// later than otherwise.
func TestManagerPaused(t *testing.T) {
	for _, pause := range []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 30 * time.Second} {
		for _, tc := range []struct {
			name       string
			tell, dead bool
		}{{"told", true, false}, {"untold", false, false}, {"told, executor silent", true, true}} {
			t.Run(fmt.Sprintf("%v %s", pause, tc.name), func(t *testing.T) {
				// The manager n0 has no CPU of its own: the executor is remote.
				c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(4))
				c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, pause + 20*time.Second }
				c.submit(0, "j", job("p", task("t", 1000)))
				c.until(5*time.Second, "task to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
				exec := c.job(0, "j").Tasks[0].Node
				c.pause(0)
				if tc.dead {
					c.cut[exec] = true
				}
				end := c.now.Add(pause)
				c.until(pause+time.Second, "the pause to end", func() bool { return !c.now.Before(end) })
				c.resume(0, tc.tell)
				woke := c.now
				if tc.dead {
					c.until(c.nodes[0].Config().LeaseTimeout+time.Second, "the silent executor's lease to lapse", func() bool { return c.job(0, "j").Tasks[0].Epoch > 1 })
					// Renewed every LeaseEvery before the pause, the lease
					// had most of LeaseTimeout left, and keeps it.
					if at, least := c.now.Sub(woke), c.nodes[0].Config().LeaseTimeout-2*c.nodes[0].Config().LeaseEvery; at < least {
						t.Errorf("lapsed %v after waking, before %v: the pause counted as the executor's silence", at, least)
					}
					return
				}
				c.until(pause+30*time.Second, "the job to end", func() bool { return c.job(0, "j").State.Terminal() })
				j := c.job(0, "j")
				runs := 0
				for _, s := range c.starts {
					if s.key.Job == "j" {
						runs++
					}
				}
				lapsed := strings.Contains(c.eventLog(), "lease lapsed")
				if tc.tell {
					succeededOnce(t, j)
					if runs != 1 || lapsed || j.Tasks[0].Epoch != 1 {
						t.Fatalf("after a pause of %v told: %d runs, epoch %d, lapsed %v; events:\n%s", pause, runs, j.Tasks[0].Epoch, lapsed, c.eventLog())
					}
				} else if pause > c.nodes[0].Config().LeaseTimeout && (runs < 2 || !lapsed) {
					t.Fatalf("after a pause of %v untold: %d runs, lapsed %v: the test no longer shows the failure it guards against", pause, runs, lapsed)
				}
			})
		}
	}
}
