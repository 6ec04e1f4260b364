package market

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/predict"
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

// TestBackfillSteal: a node that keeps room for the head (it makes the
// head's shadow) and has nothing queued asks the longest queue of its
// view for work that ends by the shadow time, as EASY backfills the
// head's room from its whole queue; before, such a node never asked (it
// had no room beside the head's) and idled while work waited elsewhere.
// The victim gives only tasks whose upper bound (estimate, or prediction
// when longer) ends by then, even where later ones sit at the back of
// its queue, from which stealing otherwise takes; and only what fits the
// thief's room now, since work queued there would outlast the shadow.
func TestBackfillSteal(t *testing.T) {
	thief, err := New(Config{Self: "t", Capacity: cpuNode(2)})
	if err != nil {
		t.Fatal(err)
	}
	gang := WaitingGang{Gang: "g/main", Size: 3, Request: resource.Request{CPU: 2000}, Priority: 5, Since: t0.Add(-time.Hour)}
	shadow := t0.Add(time.Hour)
	thief.Advert(t0, Peer{ID: "mgr", Capacity: cpuNode(2), Waiting: gang, HeadRoom: HeadRoom{Gang: gang.Gang, At: t0.Add(30 * time.Minute)}})
	thief.Advert(t0, Peer{ID: "p", Capacity: cpuNode(2), HeadRoom: HeadRoom{Gang: gang.Gang, At: shadow}})
	thief.Advert(t0, Peer{ID: "v", Capacity: cpuNode(2), Queue: 8, HeadRoom: HeadRoom{Gang: gang.Gang, Never: true}})
	if next := thief.NextTick(); next.IsZero() || next.After(t0) {
		t.Fatalf("NextTick %v: the steal the node is about to make is not due", next)
	}
	thief.Tick(t0)
	var req *StealRequest
	for _, e := range thief.Ready() {
		if s, ok := e.(Send); ok {
			if r, ok := s.Msg.(StealRequest); ok && s.To == "v" {
				req = &r
			}
		}
	}
	if req == nil {
		t.Fatalf("a node keeping room for the head until %v asked no one for work", shadow)
	}
	if !req.EndsBy.Equal(shadow) {
		t.Fatalf("steal request ends by %v, want the shadow time %v", req.EndsBy, shadow)
	}

	victim, err := New(Config{Self: "v", Capacity: cpuNode(2)})
	if err != nil {
		t.Fatal(err)
	}
	victim.now = t0
	victim.con.free.CPU = 0
	for _, q := range []struct {
		job      string
		run, est time.Duration
	}{
		{"short", 10 * time.Minute, 20 * time.Minute},
		{"short2", 10 * time.Minute, 20 * time.Minute},
		{"short-est-long", 10 * time.Minute, 2 * time.Hour}, // its estimate outlasts the shadow
		{"fits", 50 * time.Minute, 0},
		{"fits2", 40 * time.Minute, 0},
		{"long", 3 * time.Hour, 3 * time.Hour},
		{"long2", 3 * time.Hour, 0},
		{"long3", 3 * time.Hour, 0},
	} {
		s := spec1(q.job, resource.Request{CPU: 1000})
		s.Estimate = q.est
		victim.con.enqueue(&contract{spec: s, manager: "mgr", runtime: q.run})
	}
	victim.Advert(t0, Peer{ID: "t", Capacity: cpuNode(2)})
	victim.con.onStealRequest(*req)
	var got []string
	for _, e := range victim.Ready() {
		if s, ok := e.(Send); ok {
			if x, ok := s.Msg.(Transfer); ok {
				got = append(got, x.Key.Job)
			}
		}
	}
	slices.Sort(got)
	if want := []string{"fits", "fits2"}; !slices.Equal(got, want) {
		t.Errorf("victim gave %v, want %v (from the back, those that end by the shadow, as many as the thief has free cores)", got, want)
	}
}

// An idle node asks a loaded peer for work only when that peer's advert
// shows queued work that could fit here (StealOffer), and looks again
// only when an advert or its own room changes: asking peers whose queues
// hold nothing it can run was most of a replay's messages (idle nodes
// asking every 500 ms to 16 s for weeks, docs/simulator.md).
func TestStealAsksOnlyForWorkThatFits(t *testing.T) {
	big := StealOffer{Known: true, Count: 3, CPU: 8000, Memory: 1 << 30}
	small := StealOffer{Known: true, Count: 3, CPU: 1000, Memory: 1 << 30}
	long := StealOffer{Known: true, Count: 3, CPU: 1000, Memory: 1 << 30, Runtime: time.Hour}
	for _, tc := range []struct {
		name  string
		offer StealOffer
		asks  bool
	}{
		{"nothing stealable", StealOffer{Known: true}, false},
		{"needs more CPU than free here", big, false},
		{"needs a GPU", StealOffer{Known: true, Count: 1, CPU: 1000, GPUs: 1}, false},
		{"fits", small, true},
		{"a peer that does not say", StealOffer{}, true},
		{"fits, long", long, true},
	} {
		m, err := New(Config{Self: "n1", Capacity: cpuNode(4), JobReplicas: -1})
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		m.Tick(now)
		m.Ready()
		m.Advert(now, Peer{ID: "v", Capacity: cpuNode(8), Queue: 3, Steal: tc.offer})
		asked := 0
		for range 20 { // 20 s: at 500 ms to 16 s apart, a plain idle node asks several times
			next := m.NextTick()
			if next.IsZero() || next.After(t0.Add(20*time.Second)) {
				break
			}
			now = next
			m.Tick(now)
			for _, e := range m.Ready() {
				if s, ok := e.(Send); ok {
					if _, ok := s.Msg.(StealRequest); ok {
						asked++
					}
				}
			}
		}
		if (asked > 0) != tc.asks {
			t.Errorf("%s: %d steal requests in 20 s, want any: %v", tc.name, asked, tc.asks)
		}
		if !tc.asks {
			// the advert that shows work that fits makes it ask at once
			m.Advert(now, Peer{ID: "v", Capacity: cpuNode(8), Queue: 3, Steal: small})
			m.Tick(now.Add(time.Millisecond))
			got := 0
			for _, e := range m.Ready() {
				if s, ok := e.(Send); ok {
					if _, ok := s.Msg.(StealRequest); ok {
						got++
					}
				}
			}
			if got != 1 {
				t.Errorf("%s: %d steal requests after an advert showing work that fits, want 1", tc.name, got)
			}
		}
	}
}

// A node's StealOffer covers only the queued replicas it would hand over,
// each resource the least any of them asks.
func TestStealOfferSummarisesTheQueue(t *testing.T) {
	c := newContractor(cpuNode(16), predict.RuntimeConfig{})
	add := func(name string, r resource.Request, est time.Duration) {
		c.queue = append(c.queue, &contract{spec: TaskSpec{TaskOffer: TaskOffer{Key: TaskKey{Job: "j", Task: name}, Request: r, Estimate: est}}})
	}
	if o := c.stealOffer(); o != (StealOffer{Known: true}) {
		t.Fatalf("empty queue: %+v", o)
	}
	add("pinned", resource.Request{CPU: 100, GPU: resource.GPURequest{Count: 1, Model: "A100"}}, time.Minute)
	add("site", resource.Request{CPU: 100, Site: "edge"}, time.Minute)
	if o := c.stealOffer(); o.Count != 0 {
		t.Fatalf("only replicas a thief cannot take: %+v", o)
	}
	add("a", resource.Request{CPU: 4000, Memory: 1 << 30}, 10*time.Minute)
	add("b", resource.Request{CPU: 2000, Memory: 4 << 30, GPU: resource.GPURequest{Count: 1, Share: 250}}, 0)
	o := c.stealOffer()
	if o.Count != 2 || o.CPU != 2000 || o.Memory != 1<<30 || o.GPUs != 0 {
		t.Fatalf("offer %+v; want 2 replicas, 2000 millicores, 1 GiB, no GPU", o)
	}
	if want := upperRuntime(0, 10*time.Minute); o.Runtime > want {
		t.Fatalf("runtime %v; want at most %v", o.Runtime, want)
	}
}
