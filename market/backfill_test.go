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
			c := &m.c
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
			m.schedule()
			if len(c.running) != 1 {
				t.Fatalf("%d running, want only the first task", len(c.running))
			}
			offer := spec1("later", tc.req).TaskOffer
			offer.Estimate = tc.rt
			k := &contract{spec: TaskSpec{TaskOffer: offer}, runtime: tc.rt}
			predicted := c.predictStart(offer, t0) // no history: the estimate
			c.enqueue(k)
			m.schedule()
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
			m.c.free.CPU = 0 // everything is taken by work not modelled here
			m.c.enqueue(&contract{spec: spec1("q", resource.Request{CPU: 2000}), manager: "mgr", runtime: time.Minute})
			m.onStealRequest(StealRequest{Thief: "thief", Room: resource.Request{CPU: 2 * tc.freeCPU, Memory: 2 << 30}, Max: 1})
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
			m.c.free.CPU = 0 // its running work holds the CPU
			m.c.enqueue(&contract{spec: spec1("q", tc.req), manager: "mgr", runtime: time.Minute})
			m.onStealRequest(StealRequest{Thief: "thief", Room: resource.Request{CPU: 8000, Memory: 8 << 30,
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

// TestExpectedEnd: a running task is expected to end at its predicted
// time while that is ahead; overrun by x, it is expected to run x more,
// but no later than a timeout or user estimate it has not yet reached.
// The admissions' endOf still counts an overrun task as ending at once.
func TestExpectedEnd(t *testing.T) {
	const predicted = 10 * time.Minute
	cases := []struct {
		name              string
		at                time.Duration // since the start
		timeout, estimate time.Duration
		want              time.Duration // since the start
	}{
		{"before its predicted end", 4 * time.Minute, 0, 0, predicted},
		{"at its predicted end", predicted, 0, 0, predicted + time.Millisecond},
		{"overrun by 5 minutes: 5 more", 15 * time.Minute, 0, 0, 20 * time.Minute},
		{"overrun by an hour: an hour more", 70 * time.Minute, 0, 0, 130 * time.Minute},
		{"the timeout comes first", 15 * time.Minute, 18 * time.Minute, 0, 18 * time.Minute},
		{"the user's estimate comes first", 15 * time.Minute, 0, 16 * time.Minute, 16 * time.Minute},
		{"the earlier of timeout and estimate", 15 * time.Minute, 19 * time.Minute, 17 * time.Minute, 17 * time.Minute},
		{"a timeout already passed says nothing", 15 * time.Minute, 12 * time.Minute, 0, 20 * time.Minute},
		{"an estimate already passed says nothing", 15 * time.Minute, 0, 15 * time.Minute, 20 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := &contract{spec: spec1("run", resource.Request{CPU: 1000}), started: t0, runtime: predicted, running: true}
			k.spec.Timeout, k.spec.Estimate = tc.timeout, tc.estimate
			now := t0.Add(tc.at)
			if got := expectedEnd(k, now).Sub(t0); got != tc.want {
				t.Errorf("expected end at +%v, want +%v", got, tc.want)
			}
			wantEarliest := predicted
			if tc.at >= predicted {
				wantEarliest = tc.at + time.Millisecond
			}
			if got := endOf(k, now).Sub(t0); got != wantEarliest {
				t.Errorf("earliest end at +%v, want +%v", got, wantEarliest)
			}
		})
	}
}

// TestOverrunTaskDelaysBids: a node whose only core is held by a task
// that overran its prediction by half an hour bids to start the next task
// when the task is expected to end, not at once; a node whose task has
// just reached its predicted end still bids to start at once. Bidding
// "at once" for as long as the task ran on drew work that then waited
// (on the Alibaba trace, one pod waited almost five hours).
func TestOverrunTaskDelaysBids(t *testing.T) {
	cases := []struct {
		name string
		at   time.Duration // since the running task started
		want time.Duration // predicted wait
	}{
		{"half an hour overrun", 31 * time.Minute, 30 * time.Minute},
		{"at its predicted end", time.Minute, time.Millisecond},
		{"not yet at its predicted end", 20 * time.Second, 40 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Self: "n", Capacity: cpuNode(1)})
			if err != nil {
				t.Fatal(err)
			}
			c := &m.c
			req := resource.Request{CPU: 1000}
			run := &contract{spec: spec1("run", req), started: t0, runtime: time.Minute, running: true}
			c.free.Take(req, resource.Allocation{})
			c.running[run.spec.Key] = run
			now := t0.Add(tc.at)
			offer := spec1("next", req).TaskOffer
			if got := c.predictStart(offer, now).Sub(now); got != tc.want {
				t.Errorf("bid predicts a start in %v, want %v", got, tc.want)
			}
			if got := m.PredictedWait(now); got != tc.want {
				t.Errorf("predicted wait %v, want %v", got, tc.want)
			}
		})
	}
}
