package market

import (
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// TestUnenforcedLimitsRefused: a node that cannot enforce a limit a task
// asks for neither bids for it nor is invited, unless it runs such tasks
// unenforced; a task that nobody may run fails naming the missing limit
// and the closest node; a task asking for no limit runs anywhere.
func TestUnenforcedLimitsRefused(t *testing.T) {
	noMemory := resource.Enforcement{Missing: resource.LimitMemory | resource.LimitPids}
	anyway := resource.Enforcement{Missing: resource.LimitMemory, Unenforced: true}
	memTask := func(name string) spec.Task {
		tk := task(name, 1000)
		tk.Request.Memory, tk.Request.Limits = 1<<30, resource.LimitMemory
		return tk
	}
	cases := []struct {
		name     string
		limits   []resource.Enforcement // per node; node 0 submits
		task     spec.Task
		failWith string // "": the job must succeed
	}{
		{"memory limit goes to the node enforcing it", []resource.Enforcement{noMemory, {}}, memTask("m"), ""},
		{"memory limit runs where told to run unenforced", []resource.Enforcement{noMemory, anyway}, memTask("m"), ""},
		{"submitter runs it unenforced when told to", []resource.Enforcement{anyway, noMemory}, memTask("m"), ""},
		{"nobody may run it", []resource.Enforcement{noMemory, noMemory}, memTask("m"), "limits: memory not enforced on this node (closest peer n"},
		{"no limit asked runs anywhere", []resource.Enforcement{noMemory, noMemory}, task("plain", 1000), ""},
		{"cpu limit is not memory", []resource.Enforcement{noMemory, noMemory}, func() spec.Task {
			tk := task("c", 500)
			tk.Request.Limits = resource.LimitCPU
			return tk
		}(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, func(i int, cfg *Config) {
				cfg.Limits = tc.limits[i]
				cfg.SchedulingTimeout = 2 * time.Second
			}, cpuNode(4), cpuNode(4))
			c.submit(0, "j", job("j", tc.task))
			c.until(time.Minute, "the job to end", func() bool { return c.job(0, "j").State.Terminal() })
			j := c.job(0, "j")
			if tc.failWith != "" {
				if j.State != JobFailed || !strings.Contains(j.Reason, tc.failWith) {
					t.Fatalf("job %s (%s), want failed with %q", j.State, j.Reason, tc.failWith)
				}
				if len(c.starts) != 0 {
					t.Fatalf("started %v", c.starts)
				}
				return
			}
			if j.State != JobSucceeded {
				t.Fatalf("job %s (%s)", j.State, j.Reason)
			}
			ran := map[NodeID]bool{}
			for _, s := range c.starts {
				ran[s.node] = true
			}
			for id := range ran {
				if e := tc.limits[c.index(id)]; e.Refusal(tc.task.Request) != "" {
					t.Fatalf("ran on %s, which cannot enforce %v", id, tc.task.Request.Limits)
				}
			}
			if tc.limits[0].Refusal(tc.task.Request) == "" && tc.limits[1].Refusal(tc.task.Request) != "" && !ran["n0"] {
				t.Fatalf("did not run on n0, the only node that may: %v", c.starts)
			}
		})
	}
}

// TestAwardOutsideLimitsRefused: an award, a stolen replica's included,
// for a task whose limits the node cannot enforce is declined.
func TestAwardOutsideLimitsRefused(t *testing.T) {
	m, err := New(Config{Self: "n", Capacity: cpuNode(4), Limits: resource.Enforcement{Missing: resource.LimitMemory}})
	if err != nil {
		t.Fatal(err)
	}
	tk := task("m", 1000)
	tk.Request.Memory, tk.Request.Limits = 1<<30, resource.LimitMemory
	offer := TaskOffer{Key: TaskKey{Job: "j", Task: "m"}, Request: tk.Request}
	m.Step(t0, "mgr", Award{Auction: AuctionID{Key: offer.Key, Epoch: 1}, Manager: "mgr", Direct: true,
		Task: TaskSpec{TaskOffer: offer, Command: tk.Command, Epoch: 1}})
	for _, e := range m.Ready() {
		if s, ok := e.(Send); ok {
			r, ok := s.Msg.(AwardReply)
			if !ok {
				continue
			}
			if r.Accept || !strings.Contains(r.Reason, "limits: memory not enforced") {
				t.Fatalf("award reply %+v", r)
			}
			return
		}
	}
	t.Fatal("no award reply")
}

// TestLoneNodeFastPath: a node with no peer in its view places a task
// as soon as its own bid is in, without waiting out a bid window; with a
// peer it waits for the peer's answer.
func TestLoneNodeFastPath(t *testing.T) {
	for _, nodes := range []int{1, 2} {
		caps := make([]resource.Vector, nodes)
		for i := range caps {
			caps[i] = cpuNode(4)
		}
		c := newCluster(t, caps...)
		c.latency = 5 * time.Millisecond
		c.submit(0, "j", job("j", task("t", 1000)))
		c.until(time.Minute, "the task to start", func() bool { return len(c.starts) > 0 })
		took := c.starts[0].at.Sub(t0)
		if nodes == 1 && took > 0 {
			t.Errorf("a lone node started its task %v after submit, want at once", took)
		}
		if nodes == 2 && took < 2*c.latency {
			t.Errorf("with a peer the task started %v after submit, before the peer could answer", took)
		}
	}
}
