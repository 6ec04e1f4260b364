package market

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// TestQueueHeadProtected: on a node with four GPUs, one running 1-GPU task
// predicted to end in 10 minutes and a queued whole-node task waiting for
// it, a later contract starts now only if it cannot delay the whole-node
// task — it ends within the 10 minutes, or it leaves the node's GPUs
// alone — and the node's bids say the same (predictStart agrees with
// schedule). Before the guard a stream of short 1-GPU tasks kept a
// whole-node task waiting for as long as the stream lasted.
func TestQueueHeadProtected(t *testing.T) {
	gpu1 := resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}
	cases := []struct {
		name    string
		req     resource.Request
		rt      time.Duration
		startup bool
	}{
		{"short 1-GPU task ends before the head's room", gpu1, 5 * time.Minute, true},
		{"exactly at the head's shadow time", gpu1, 10 * time.Minute, true},
		{"long 1-GPU task would delay the head", gpu1, time.Hour, false},
		{"long CPU task leaves the head its room", resource.Request{CPU: 4000}, time.Hour, true},
		{"long CPU task too large for the room left beside the head", resource.Request{CPU: 12000}, time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Self: "n", Capacity: gpuNode(16, 4, 80<<30, "A100")})
			if err != nil {
				t.Fatal(err)
			}
			m.now = t0
			c := m.con
			run := &contract{spec: spec1("run", gpu1), started: t0, runtime: 10 * time.Minute, running: true}
			al, why := resource.Fit(c.free, gpu1)
			if why != "" {
				t.Fatal(why)
			}
			run.alloc = al
			c.free.Take(gpu1, al)
			c.running[run.spec.Key] = run
			whole := resource.Request{CPU: 8000, GPU: resource.GPURequest{Count: 4}}
			c.enqueue(&contract{spec: spec1("head", whole), runtime: 2 * time.Hour})
			m.con.schedule()
			if len(c.running) != 1 {
				t.Fatalf("%d running, want only the first task", len(c.running))
			}
			offer := spec1("later", tc.req).TaskOffer
			offer.Estimate = tc.rt
			k := &contract{spec: TaskSpec{TaskOffer: offer}, runtime: tc.rt}
			predicted := c.predictStart(offer, t0) // no history: the estimate
			c.enqueue(k)
			m.con.schedule()
			_, started := c.running[offer.Key]
			if started != tc.startup {
				t.Errorf("started = %v, want %v", started, tc.startup)
			}
			if now := predicted.Equal(t0); now != started {
				t.Errorf("bid predicted start at +%v, but schedule started it: %v", predicted.Sub(t0), started)
			}
			if _, ok := c.running[TaskKey{Job: "head", Task: "t"}]; ok {
				t.Errorf("the whole-node task started beside a running 1-GPU task")
			}
		})
	}
}

func spec1(job string, req resource.Request) TaskSpec {
	return TaskSpec{TaskOffer: TaskOffer{Key: TaskKey{Job: job, Task: "t"}, Type: job, Request: req}}
}

// TestLoneQueuedTaskStolen: a victim with one queued task gives it to a
// thief only when the thief has room for it now (a steal request asks for
// twice the thief's free room).
func TestLoneQueuedTaskStolen(t *testing.T) {
	for _, tc := range []struct {
		freeCPU int64
		given   bool
	}{{4000, true}, {2000, true}, {1000, false}} {
		t.Run(fmt.Sprintf("thief has %d free", tc.freeCPU), func(t *testing.T) {
			m, err := New(Config{Self: "v", Capacity: cpuNode(4)})
			if err != nil {
				t.Fatal(err)
			}
			m.now = t0
			m.con.free.CPU = 0 // everything is taken by work not modelled here
			m.con.enqueue(&contract{spec: spec1("q", resource.Request{CPU: 2000}), manager: "mgr", runtime: time.Minute})
			m.Advert(t0, Peer{ID: "thief", Capacity: cpuNode(4)})
			m.con.onStealRequest(StealRequest{Thief: "thief", Room: resource.Request{CPU: 2 * tc.freeCPU, Memory: 2 << 30}, Max: 1})
			if got := transfers(m.Ready()) == 1; got != tc.given {
				t.Errorf("transferred = %v, want %v", got, tc.given)
			}
			if tc.given != (m.QueueLen() == 0) {
				t.Errorf("queue holds %d after the request", m.QueueLen())
			}
		})
	}
}

// TestQueuedGPUShareStolen: a queued share of one GPU goes to a thief
// with a whole free card, as a whole-card request does; not to a thief
// without one, nor a request that names a GPU model the room does not
// describe.
func TestQueuedGPUShareStolen(t *testing.T) {
	for _, tc := range []struct {
		name       string
		req        resource.Request
		thiefCards int
		given      bool
	}{
		{"share, thief has a free card", resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 230}}, 1, true},
		{"share, thief has none", resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 230}}, 0, false},
		{"whole card, thief has one", resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}, 1, true},
		{"share of a named model", resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 230, Model: "A100"}}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Self: "v", Capacity: gpuNode(4, 1, 80<<30, "A100")})
			if err != nil {
				t.Fatal(err)
			}
			m.now = t0
			m.con.free.CPU = 0 // its running work holds the CPU
			m.con.enqueue(&contract{spec: spec1("q", tc.req), manager: "mgr", runtime: time.Minute})
			m.Advert(t0, Peer{ID: "thief", Capacity: gpuNode(8, max(tc.thiefCards, 1), 80<<30, "A100")})
			m.con.onStealRequest(StealRequest{Thief: "thief", Room: resource.Request{CPU: 8000, Memory: 8 << 30,
				GPU: resource.GPURequest{Count: 2 * tc.thiefCards}}, Max: 1})
			if got := transfers(m.Ready()) == 1; got != tc.given {
				t.Errorf("transferred = %v, want %v", got, tc.given)
			}
		})
	}
}

// transfers counts the Transfer messages among effs.
func transfers(effs []Effect) int {
	n := 0
	for _, e := range effs {
		if s, ok := e.(Send); ok {
			if _, ok := s.Msg.(Transfer); ok {
				n++
			}
		}
	}
	return n
}

// TestStealNeedsAThiefThatCanHoldIt: a steal request from a node outside
// the view takes nothing, nor does one whose advertised capacity could
// never hold the queued task, whatever free room it claims.
func TestStealNeedsAThiefThatCanHoldIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		thief *Peer
		given bool
	}{
		{"thief in the view", &Peer{ID: "thief", Capacity: cpuNode(8)}, true},
		{"thief outside the view", nil, false},
		{"thief too small for it", &Peer{ID: "thief", Capacity: cpuNode(1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Self: "v", Capacity: cpuNode(4)})
			if err != nil {
				t.Fatal(err)
			}
			m.now = t0
			m.con.free.CPU = 0
			m.con.enqueue(&contract{spec: spec1("q", resource.Request{CPU: 2000}), manager: "mgr", runtime: time.Minute})
			m.con.enqueue(&contract{spec: spec1("r", resource.Request{CPU: 2000}), manager: "mgr", runtime: time.Minute})
			if tc.thief != nil {
				m.Advert(t0, *tc.thief)
			}
			m.con.onStealRequest(StealRequest{Thief: "thief", Room: resource.Request{CPU: 64000, Memory: 64 << 30}, Max: 2})
			effs := m.Ready()
			if got := transfers(effs) > 0; got != tc.given {
				t.Fatalf("transferred = %v, want %v", got, tc.given)
			}
			if !tc.given && tc.thief == nil && refusals(effs, RefuseSteal) != 1 {
				t.Fatal("the refused steal request was not reported")
			}
		})
	}
}

// refusals counts the Refused effects of a reason.
func refusals(effs []Effect, reason string) int {
	n := 0
	for _, e := range effs {
		if r, ok := e.(Refused); ok && r.Reason == reason {
			n++
		}
	}
	return n
}
