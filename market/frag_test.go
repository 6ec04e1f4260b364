package market

import (
	"math"
	"slices"
	"testing"

	"github.com/agora-sched/agora/devices/resource"
)

// gpusFree is a node of len(free) A100s with 32 cores, CPU millicores
// of them free, and free[i] thousandths of GPU i free.
func gpusFree(cpu int64, free ...int64) resource.Vector {
	v := gpuNode(32, len(free), 80<<30, "A100")
	v.CPU = cpu
	for i, f := range free {
		v.GPUs[i].Free = f
	}
	return v
}

func TestFragmentFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		free resource.Vector
		c    demandClass
		want int64
	}{
		{"share fits on one card; the smaller card's free is lost", gpusFree(8000, 300, 700), demandClass{cpu: 1000, share: 500}, 300},
		{"share fits nowhere: all free is lost", gpusFree(8000, 300, 400), demandClass{cpu: 1000, share: 500}, 700},
		{"share fits both cards", gpusFree(8000, 600, 1000), demandClass{cpu: 1000, share: 500}, 0},
		{"whole card: partly used cards are lost", gpusFree(8000, 1000, 500, 0), demandClass{cpu: 1000, count: 1}, 500},
		{"two whole cards wanted, one free: all lost", gpusFree(8000, 1000, 500), demandClass{cpu: 1000, count: 2}, 1500},
		{"too little CPU: all lost", gpusFree(500, 1000, 1000), demandClass{cpu: 1000, count: 1}, 2000},
		{"no GPU wanted: all lost", gpusFree(8000, 1000, 200), demandClass{cpu: 1000}, 1200},
		{"no GPUs free", gpusFree(8000, 0, 0), demandClass{cpu: 1000, share: 100}, 0},
	} {
		if got := fragmentFor(tc.free, tc.c); got != tc.want {
			t.Errorf("%s: fragment %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDemandMixObserve(t *testing.T) {
	var x demandMix
	if x.total != 0 || x.wantsGPUs() {
		t.Fatal("a new mix is not empty")
	}
	share := resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}}
	whole := resource.Request{CPU: 4000, GPU: resource.GPURequest{Count: 1}}
	cpuOnly := resource.Request{CPU: 2000}
	for _, r := range []resource.Request{share, whole, share, cpuOnly} {
		x.observe(r)
	}
	if x.total != 4 || len(x.classes) != 3 || !x.wantsGPUs() {
		t.Fatalf("total %v, classes %+v", x.total, x.classes)
	}
	if !slices.IsSortedFunc(x.classes, func(a, b demandClass) int {
		if a.less(b) {
			return -1
		}
		return 1
	}) {
		t.Fatalf("classes not sorted: %+v", x.classes)
	}
	for _, c := range x.classes {
		if c == (demandClass{cpu: 1000, share: 500, w: 2}) {
			return
		}
	}
	t.Fatalf("the share class is not counted twice: %+v", x.classes)
}

// TestDemandMixBounded: the mix keeps at most mixClasses kinds, always the
// newest observation among them, and halves old weights so that a new
// workload takes over.
func TestDemandMixBounded(t *testing.T) {
	var x demandMix
	for i := range 10 * mixClasses {
		req := resource.Request{CPU: int64(1000 + i), GPU: resource.GPURequest{Count: 1}}
		x.observe(req)
		if len(x.classes) > mixClasses {
			t.Fatalf("%d classes kept", len(x.classes))
		}
		if !slices.ContainsFunc(x.classes, func(c demandClass) bool { return c.cpu == req.CPU }) {
			t.Fatalf("observation %d not kept", i)
		}
		var sum float64
		for _, c := range x.classes {
			sum += c.w
		}
		if math.Abs(sum-x.total) > 1e-9 {
			t.Fatalf("total %v, weights sum to %v", x.total, sum)
		}
	}
	// An old workload fades: after 2·mixHalfLife observations of a new
	// kind the old one weighs at most a quarter of what it did.
	var y demandMix
	old := resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}
	for range mixHalfLife {
		y.observe(old)
	}
	w0 := y.classes[0].w
	for range 2 * mixHalfLife {
		y.observe(resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 250}})
	}
	for _, c := range y.classes {
		if c.count == 1 && c.w > w0/4+1e-9 {
			t.Fatalf("old class weighs %v of %v after two half-lives", c.w, w0)
		}
	}
}

// TestFragDelta: under a mix of half-card tasks, putting a quarter-card
// task on a card with 700 free (leaving 450, useless to them) grows
// fragmentation, while putting it on a card with 750 free (leaving 500)
// does not; filling a fragment shrinks it.
func TestFragDelta(t *testing.T) {
	var x demandMix
	for range 4 {
		x.observe(resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}})
	}
	quarter := resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 250}}
	breaks, ok1 := x.fragDelta(gpusFree(8000, 700), quarter)
	keeps, ok2 := x.fragDelta(gpusFree(8000, 750), quarter)
	fills, ok3 := x.fragDelta(gpusFree(8000, 1000, 250), quarter) // best fit takes the 250 card
	if !ok1 || !ok2 || !ok3 {
		t.Fatal("fragDelta unknown for a fitting GPU task")
	}
	if breaks != 450 || keeps != 0 || fills != -250 {
		t.Fatalf("deltas %v (break), %v (keep), %v (fill); want 450, 0, -250", breaks, keeps, fills)
	}
	if !(FragScore(fills) > FragScore(keeps) && FragScore(keeps) > FragScore(breaks)) {
		t.Fatalf("scores %v, %v, %v not decreasing", FragScore(fills), FragScore(keeps), FragScore(breaks))
	}
	if FragScore(0) != 0.5 {
		t.Fatalf("FragScore(0) = %v", FragScore(0))
	}
	for _, tc := range []struct {
		name string
		mix  demandMix
		free resource.Vector
		req  resource.Request
	}{
		{"CPU task", x, gpusFree(8000, 1000), resource.Request{CPU: 1000}},
		{"does not fit now", x, gpusFree(8000, 200), quarter},
		{"node without GPUs", x, cpuNode(8), quarter},
		{"mix without GPU work", demandMix{classes: []demandClass{{cpu: 1000, w: 1}}, total: 1}, gpusFree(8000, 1000), quarter},
	} {
		if _, ok := tc.mix.fragDelta(tc.free, tc.req); ok {
			t.Errorf("%s: fragDelta known", tc.name)
		}
	}
}

// TestFitPicksLeastFragmentingCard: under a mix of half-card tasks a
// 300-thousandths share goes to the card with 800 free (leaving 500, still
// usable) rather than the tightest with 600 (leaving 300, a fragment),
// unless that card does not match the request; with no GPU work in the
// mix, or for whole cards, the choice is Fit's.
func TestFitPicksLeastFragmentingCard(t *testing.T) {
	var x demandMix
	for range 4 {
		x.observe(resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}})
	}
	free := gpusFree(8000, 600, 800)
	share := resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 300}}
	other := free.Clone()
	other.GPUs[1].Model = "T4"
	for _, tc := range []struct {
		name string
		mix  demandMix
		free resource.Vector
		req  resource.Request
		want []int
	}{
		{"least fragmenting card", x, free, share, []int{1}},
		{"that card is another model", x, other, resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 300, Model: "A100"}}, []int{0}},
		{"no GPU work in the mix", demandMix{}, free, share, []int{0}},
		{"whole card", x, gpusFree(8000, 600, 1000, 1000), resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}, []int{1}},
	} {
		a, why := tc.mix.fit(tc.free, tc.req)
		want, _ := resource.Fit(tc.free, tc.req)
		if why != "" || !slices.Equal(a.GPUs, tc.want) || !slices.Equal(a.Shares, want.Shares) {
			t.Errorf("%s: allocation %+v (%s), want GPUs %v", tc.name, a, why, tc.want)
		}
	}
	if _, why := x.fit(gpusFree(8000, 200, 100), share); why == "" {
		t.Error("a share that fits no card was allocated")
	}
}

// TestBidsAvoidFragmenting: two nodes that fit a quarter-card task equally
// tightly by free share; the one where it would leave a card useless to
// the half-card tasks both have been seen calling for bids scores lower.
func TestBidsAvoidFragmenting(t *testing.T) {
	bid := func(free resource.Vector) float64 {
		capv := gpuNode(32, len(free.GPUs), 80<<30, "A100")
		m, err := New(Config{Self: "n", Capacity: capv})
		if err != nil {
			t.Fatal(err)
		}
		m.con.free = free
		for range 4 {
			m.con.mix.observe(resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}})
		}
		m.now = t0
		return m.con.makeBid(AuctionID{}, TaskOffer{Key: TaskKey{Job: "j", Task: "t"},
			Request: resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 250}}}).Score
	}
	// Both have 1,450 free in all; on a the task leaves 450 + 750, on b
	// 200 + 1000 — tighter by card, but a has a half card left either way
	// while b keeps a whole card and fills its fragment.
	a := bid(gpusFree(32000, 700, 750))
	b := bid(gpusFree(32000, 450, 1000))
	if !(b > a) {
		t.Fatalf("scores %v (breaks a card's usable half) vs %v (fills a fragment); want the second higher", a, b)
	}
}

// TestMixLearnsGPUCallsForBids: a node learns its mix from the calls for
// bids it could answer: GPU requests only, and not those it could never
// hold.
func TestMixLearnsGPUCallsForBids(t *testing.T) {
	m, err := New(Config{Self: "n", Capacity: gpuNode(32, 2, 80<<30, "A100")})
	if err != nil {
		t.Fatal(err)
	}
	cfp := func(task string, req resource.Request) CFP {
		k := TaskKey{Job: "j", Task: task}
		return CFP{Auction: AuctionID{Key: k, Epoch: 1}, Manager: "mgr", Task: TaskOffer{Key: k, Request: req}}
	}
	m.Step(t0, "mgr", cfp("cpu", resource.Request{CPU: 1000}))
	m.Step(t0, "mgr", cfp("eight", resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 8}}))
	m.Step(t0, "mgr", cfp("half", resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}}))
	m.Step(t0, "mgr", cfp("half2", resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}}))
	want := []demandClass{{cpu: 1000, share: 500, w: 2}}
	if !slices.Equal(m.con.mix.classes, want) || m.con.mix.total != 2 {
		t.Fatalf("mix %+v (total %v), want %+v", m.con.mix.classes, m.con.mix.total, want)
	}
}

// TestCPUTasksPreferNodesWithoutFreeGPUs: a task that asks for no GPU
// ranks nodes without GPUs, or with all of them busy, before GPU nodes
// with as much room, and among those the ones with the least GPU share
// free, so that CPU work does not eat the CPU that work on free GPUs
// needs.
func TestCPUTasksPreferNodesWithoutFreeGPUs(t *testing.T) {
	m, err := New(Config{Self: "self", Capacity: cpuNode(1)}) // self could never hold it
	if err != nil {
		t.Fatal(err)
	}
	busy := gpuNode(32, 2, 80<<30, "A100")
	busy.GPUs[0].Free, busy.GPUs[1].Free = 0, 0
	half := gpuNode(32, 2, 80<<30, "A100")
	half.GPUs[0].Free = 0
	for _, p := range []Peer{
		{ID: "a-gpu-idle", Capacity: gpuNode(32, 8, 80<<30, "A100"), Free: gpuNode(32, 8, 80<<30, "A100")},
		{ID: "b-cpu", Capacity: cpuNode(32), Free: cpuNode(32)},
		{ID: "c-gpu-half", Capacity: gpuNode(32, 2, 80<<30, "A100"), Free: half},
		{ID: "d-gpu-busy", Capacity: gpuNode(32, 2, 80<<30, "A100"), Free: busy},
	} {
		m.Advert(t0, p)
	}
	var got []NodeID
	for _, c := range m.auc.candidates(TaskOffer{Request: resource.Request{CPU: 2000}}, nil) {
		got = append(got, c.id)
	}
	if len(got) != 4 || !slices.Contains(got[:2], "b-cpu") || !slices.Contains(got[:2], "d-gpu-busy") || !slices.Equal(got[2:], []NodeID{"c-gpu-half", "a-gpu-idle"}) {
		t.Fatalf("candidates %v, want b-cpu and d-gpu-busy, then c-gpu-half, a-gpu-idle", got)
	}
}

// TestCPUTaskInvitesOneGPUNode: when the d best candidates for a task
// without GPUs have no free GPUs, the last invitation goes to the best
// node with free GPUs that fits now, so that a stale view of the others
// does not cost a round; with fewer candidates than that, or a free GPU
// node among them already, the invitations are the ranking's.
func TestCPUTaskInvitesOneGPUNode(t *testing.T) {
	m, err := New(Config{Self: "self", Capacity: cpuNode(1), D: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []NodeID{"cpu-1", "cpu-2", "cpu-3", "cpu-4"} {
		m.Advert(t0, Peer{ID: id, Capacity: cpuNode(32), Free: cpuNode(32)})
	}
	m.Advert(t0, Peer{ID: "gpu", Capacity: gpuNode(32, 8, 80<<30, "A100"), Free: gpuNode(32, 8, 80<<30, "A100")})
	if err := m.Submit(t0, "j", job("x", task("t", 2000))); err != nil {
		t.Fatal(err)
	}
	var invited []NodeID
	for _, e := range m.Ready() {
		if s, ok := e.(Send); ok {
			if _, ok := s.Msg.(CFP); ok {
				invited = append(invited, s.To)
			}
		}
	}
	if len(invited) != 3 || !slices.Contains(invited, "gpu") {
		t.Fatalf("invited %v, want two CPU nodes and gpu", invited)
	}

	for _, tc := range []struct {
		name  string
		cands []candidate
		n     int
		want  []NodeID
	}{
		{"swapped in", []candidate{{id: "a"}, {id: "b"}, {id: "c", wait: 1}, {id: "g", fit: 1}}, 2, []NodeID{"a", "g", "c", "b"}},
		{"tried GPU node skipped", []candidate{{id: "a"}, {id: "b"}, {id: "g", fit: 1, tried: true}, {id: "h", fit: 0.5}}, 2, []NodeID{"a", "h", "g", "b"}},
		{"GPU node that would wait skipped", []candidate{{id: "a"}, {id: "b"}, {id: "g", fit: 1, wait: 1}}, 2, []NodeID{"a", "b", "g"}},
		{"one already invited", []candidate{{id: "a"}, {id: "g", fit: 1}, {id: "h", fit: 1}}, 2, []NodeID{"a", "g", "h"}},
		{"all invited anyway", []candidate{{id: "a"}, {id: "g", fit: 1}}, 2, []NodeID{"a", "g"}},
		{"d = 1", []candidate{{id: "a"}, {id: "g", fit: 1}}, 1, []NodeID{"a", "g"}},
	} {
		inviteOneGPUNode(tc.cands, tc.n)
		var got []NodeID
		for _, c := range tc.cands {
			got = append(got, c.id)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
