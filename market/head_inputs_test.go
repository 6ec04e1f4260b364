package market

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// shadowFromView is shadowOf computed with a pass over the whole view,
// as it was before headInputs kept the room times per peer: the
// reference the kept inputs must always agree with.
func shadowFromView(m *Market, w WaitingGang) *head {
	now := m.now.UnixNano()
	var ats []int64 // every room time, this node's own included
	type peerRoom struct {
		at int64
		id NodeID
	}
	var peers []peerRoom
	self := int64(-1)
	if couldHold(m.cfg.Site, m.cfg.Labels, m.cfg.Limits, m.con.capacity, w.Request) == "" {
		self = max(nanos(m.con.roomForHead(w)), now)
		ats = append(ats, self)
	}
	for _, p := range m.view {
		if couldHold(p.Site, p.Labels, p.Limits, p.Capacity, w.Request) != "" {
			continue
		}
		at := int64(math.MaxInt64)
		switch {
		case p.HeadRoom.Gang == w.Gang:
			if !p.HeadRoom.Never {
				at = max(nanos(p.HeadRoom.At), now)
			}
		default:
			free := p.Free
			if p.Reserved.Gang != "" && p.Reserved.Gang != w.Gang {
				free = p.Reserved.Unreserved
			}
			if _, why := resource.Fit(free, w.Request); why == "" {
				at = now
			}
		}
		ats = append(ats, at)
		peers = append(peers, peerRoom{at, p.ID})
	}
	if len(ats) < w.Size || float64(w.Size) <= m.cfg.HeadWidth*float64(len(ats)) {
		return nil
	}
	shadow := nthSmallest(slices.Clone(ats), w.Size-1) // it reorders its input
	if shadow == math.MaxInt64 {
		return &head{WaitingGang: w}
	}
	// This node keeps room when it has room by the shadow time and fewer
	// than size of the peers that do come after it.
	after := 0
	for _, p := range peers {
		if p.at <= shadow+int64(shadowSlack) && (p.at > self || p.at == self && p.id > m.cfg.Self) {
			after++
		}
	}
	return &head{WaitingGang: w, shadow: time.Unix(0, shadow), known: true, mine: self >= 0 && self <= shadow+int64(shadowSlack) && after < w.Size}
}

// Random adverts, departures and returns of peers, under two head
// candidates that take turns: after every event the head computed from
// the kept inputs is the one a pass over the view gives. This node's ID sorts after every peer's, then among them: ties of
// room times are broken by ID.
func TestHeadInputsFollowTheView(t *testing.T) {
	for _, self := range []NodeID{"n050", "n020"} {
		t.Run(string(self), func(t *testing.T) { headInputsFollowTheView(t, self) })
	}
}

func headInputsFollowTheView(t *testing.T, self NodeID) {
	rng := rand.New(rand.NewSource(7))
	m, err := New(Config{Self: self, Capacity: cpuNode(4), HeadWidth: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	gangs := []WaitingGang{
		{Gang: "a/t", Size: 6, Request: resource.Request{CPU: 2000}, Priority: 5, Since: t0},
		{Gang: "b/t", Size: 4, Request: resource.Request{CPU: 3000, Memory: 8 << 30}, Priority: 5, Since: t0.Add(time.Second)},
	}
	peer := func(i int) Peer {
		p := Peer{ID: NodeID(fmt.Sprintf("n%03d", i)), Capacity: cpuNode(1 + i%4)}
		p.Free = p.Capacity
		p.Free.CPU = int64(rng.Intn(5)) * 1000
		switch rng.Intn(4) {
		case 0:
			g := gangs[rng.Intn(2)]
			p.HeadRoom = HeadRoom{Gang: g.Gang, At: now.Add(time.Duration(rng.Intn(120)-20) * time.Second)}
			if rng.Intn(3) == 0 { // the same room time as this node's: ties go by ID
				p.HeadRoom.At = m.con.roomForHead(g)
			}
		case 1:
			p.HeadRoom = HeadRoom{Gang: gangs[rng.Intn(2)].Gang, Never: rng.Intn(4) == 0}
		case 2:
			p.Reserved = ReservedRoom{Gang: "c/t", Unreserved: resource.Vector{CPU: 1000, Memory: 64 << 30, Disk: 1 << 40}}
		}
		if i%17 == 0 {
			p.Waiting = gangs[i%2]
		}
		return p
	}
	load := rand.New(rand.NewSource(3))
	checked, later := 0, 0
	for step := 0; step < 3000; step++ {
		stirView(m, rng, &now, 3000, 40, peer)
		if step%25 == 0 {
			loadSelf(t, m, load, now)
		}
		if r := m.con.roomForHead(gangs[0]); r.After(now) {
			later++
		}
		w := gangs[(step/50)%2] // the candidate changes now and then
		got, want := m.gang.shadowOf(w), shadowFromView(m, w)
		if (got == nil) != (want == nil) || got != nil && (got.known != want.known || got.mine != want.mine || !got.shadow.Equal(want.shadow)) {
			t.Fatalf("step %d, gang %s: kept inputs give %+v, the view %+v", step, w.Gang, got, want)
		}
		if got != nil && got.known {
			checked++
		}
	}
	if checked < 500 || later < 500 {
		t.Fatalf("only %d of the steps had a known shadow to compare, %d this node's room later than now", checked, later)
	}
	t.Logf("%d of 3000 steps compared a known shadow; in %d this node had room only later", checked, later)
}

// loadSelf replaces the task that keeps this node busy (or idle) with a
// new one that takes the whole node until a random time, past or to come,
// so that its own room time for a head falls before, among and after its
// peers'.
func loadSelf(t *testing.T, m *Market, rng *rand.Rand, now time.Time) {
	c := m.con
	key := TaskKey{Job: "self-load", Task: "t"}
	if k := c.running[key]; k != nil {
		c.free.Give(k.spec.Request, k.alloc)
		delete(c.running, key)
	}
	if rng.Intn(3) == 0 {
		return
	}
	req := resource.Request{CPU: 4000}
	al, why := resource.Fit(c.free, req)
	if why != "" {
		t.Fatal(why)
	}
	c.free.Take(req, al)
	c.running[key] = &contract{spec: spec1(key.Job, req), alloc: al, running: true,
		started: now.Add(-time.Duration(rng.Intn(60)) * time.Second), runtime: time.Duration(1+rng.Intn(120)) * time.Second}
}

// headBySorting is findHead as it was, sorting every candidate first: the
// reference its selection in order must agree with.
func headBySorting(m *Market) (*head, int) {
	var cands []WaitingGang
	if w := m.Waiting(); w.Gang != "" {
		cands = append(cands, w)
	}
	for _, w := range m.gang.hin.waiting {
		cands = append(cands, w)
	}
	sort.Slice(cands, func(i, j int) bool { return m.gang.waitingBefore(cands[i], cands[j]) })
	for i, w := range cands {
		if h := m.gang.shadowOf(w); h != nil {
			return h, i
		}
	}
	return nil, len(cands)
}

// Random adverts naming waiting gangs, some of which no view could hold
// (wider than the view, or asking more than any node has): after every
// event findHead picks the head the sorted candidates give, also when
// it is not the first of them.
func TestFindHeadTakesCandidatesInOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	m, err := New(Config{Self: "n050", Capacity: cpuNode(4), HeadWidth: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	var gangs []WaitingGang
	for i := range 8 {
		w := WaitingGang{Gang: fmt.Sprintf("g%d/t", i), Size: 3 + i%3, Request: resource.Request{CPU: 1000}, Priority: 5 + i%2, Since: t0.Add(time.Duration(rng.Intn(5)) * time.Second)}
		switch i % 4 {
		case 0:
			w.Size = 100 // more nodes than any view holds
		case 1:
			w.Request.CPU = 64000 // more than any node has
		}
		gangs = append(gangs, w)
	}
	peer := func(i int) Peer {
		p := Peer{ID: NodeID(fmt.Sprintf("n%03d", i)), Capacity: cpuNode(1 + i%4)}
		p.Free = p.Capacity
		p.Free.CPU = int64(rng.Intn(5)) * 1000
		if rng.Intn(3) > 0 {
			p.Waiting = gangs[rng.Intn(len(gangs))]
		}
		if rng.Intn(3) == 0 {
			p.HeadRoom = HeadRoom{Gang: gangs[rng.Intn(len(gangs))].Gang, At: now.Add(time.Duration(rng.Intn(60)) * time.Second)}
		}
		return p
	}
	notFirst := 0
	for step := 0; step < 2000; step++ {
		stirView(m, rng, &now, 2000, 30, peer)
		got := m.gang.findHead()
		want, at := headBySorting(m)
		if (got == nil) != (want == nil) || got != nil && (got.Gang != want.Gang || got.known != want.known || got.mine != want.mine || !got.shadow.Equal(want.shadow)) {
			t.Fatalf("step %d: findHead gives %+v, the sorted candidates %+v", step, got, want)
		}
		if want != nil && at > 0 {
			notFirst++
		}
	}
	if notFirst < 200 {
		t.Fatalf("only %d steps had a head that was not the first candidate", notFirst)
	}
	t.Logf("%d of 2000 steps found the head past the first candidate", notFirst)
}

// stirView moves the clock on by up to maxGapMs milliseconds and has one
// of n peers advertise itself (peer(i)) or, one time in ten, leave the
// view.
func stirView(m *Market, rng *rand.Rand, now *time.Time, maxGapMs, n int, peer func(int) Peer) {
	*now = now.Add(time.Duration(rng.Intn(maxGapMs)) * time.Millisecond)
	i := rng.Intn(n)
	if rng.Intn(10) == 0 {
		m.PeerGone(*now, NodeID(fmt.Sprintf("n%03d", i)))
	} else {
		m.Advert(*now, peer(i))
	}
}

// TestFirstWaitingFollowsAdverts checks the kept first candidate against
// the peers' candidates as the test recorded them, while peers change the
// gang they name, stop naming one and leave the view. Each gang is named
// by one peer at a time, as in a real view, so a stale first is not
// hidden by another peer naming the same gang.
func TestFirstWaitingFollowsAdverts(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	m, err := New(Config{Self: "n999", Capacity: cpuNode(4)})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	named := map[NodeID]WaitingGang{}
	changes := 0
	for step := range 5000 {
		now = now.Add(time.Duration(rng.Intn(500)) * time.Millisecond)
		i := rng.Intn(40)
		id := NodeID(fmt.Sprintf("n%03d", i))
		p := Peer{ID: id, Capacity: cpuNode(4)}
		p.Free = p.Capacity
		switch r := rng.Intn(10); {
		case r == 0:
			m.PeerGone(now, id)
			delete(named, id)
		case r < 4:
			m.Advert(now, p)
			delete(named, id)
		default:
			w, ok := named[id]
			if !ok || rng.Intn(3) == 0 { // a new gang; else the same one again
				w = WaitingGang{Gang: fmt.Sprintf("j%d-%d/t", i, step), Size: 2, Request: resource.Request{CPU: 1000},
					Priority: rng.Intn(3), Since: t0.Add(time.Duration(rng.Intn(100)) * time.Second)}
				changes++
			}
			p.Waiting = w
			m.Advert(now, p)
			named[id] = w
		}
		var want WaitingGang
		for _, w := range named {
			if want.Gang == "" || m.gang.waitingBefore(w, want) {
				want = w
			}
		}
		got := m.gang.hin.firstWaiting(m.gang.waitingBefore)
		if got.Gang != want.Gang || got.Priority != want.Priority || !got.Since.Equal(want.Since) {
			t.Fatalf("step %d: first candidate %s (priority %d, since %v), want %s (priority %d, since %v)",
				step, got.Gang, got.Priority, got.Since, want.Gang, want.Priority, want.Since)
		}
	}
	if changes < 1000 {
		t.Fatalf("only %d gang changes: the test does not stir the candidates", changes)
	}
}

// nthSmallest returns the n-th smallest (from 0) of xs, reordering xs
// (quickselect).
func nthSmallest(xs []int64, n int) int64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		p := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return xs[n]
		}
	}
	return xs[n]
}

// TestRoomsBefore: the peers that come before this node for a head's
// room, by room time raised to now and then by ID.
func TestRoomsBefore(t *testing.T) {
	var hi headInputs
	slots := map[NodeID]int32{}
	for _, e := range []struct {
		at int64
		id NodeID
	}{{50, "n5"}, {10, "n1"}, {100, "n2"}, {100, "n8"}, {math.MaxInt64, "n3"}, {30, "n9"}, {7, "n4"}} {
		slots[e.id] = hi.addRoom(e.id, e.at)
	}
	hi.moveRoom(slots["n4"], 7, 100) // from first to among the ties
	hi.ats[slots["n4"]] = 100
	for _, tc := range []struct {
		name        string
		self, now   int64
		id          NodeID
		limit, want int
	}{
		{"later than all but never", 200, 40, "n0", 99, 6},
		{"tie at 100: smaller IDs first", 100, 40, "n3", 99, 4},                 // 10, 30, 50, n2; not n4, n8
		{"tie at 100, smallest ID", 100, 40, "n0", 99, 3},                       // 10, 30, 50
		{"room now: those with room now and a smaller ID", 40, 40, "n6", 99, 1}, // n1 (10); n9 (30) has a larger ID
		{"room now, largest ID", 60, 60, "z", 99, 3},                            // n1, n9, n5
		{"counting stops at the limit", 60, 60, "z", 2, 2},
		{"never, tie with never", math.MaxInt64, 40, "n4", 99, 7},
	} {
		if got := hi.before(tc.self, tc.now, tc.id, tc.limit); got != tc.want {
			t.Errorf("%s: before = %d, want %d", tc.name, got, tc.want)
		}
	}
	hi.removeRoom(slots["n2"], 100)
	if got := hi.before(100, 40, "n3", 99); got != 3 {
		t.Errorf("after removing n2: before = %d, want 3", got)
	}
}
