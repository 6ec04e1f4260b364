package market

import (
	"fmt"
	"math"
	"math/rand"
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
	var ats []int64
	self := int64(-1)
	if couldHold(m.cfg.Site, m.cfg.Labels, m.cfg.Limits, m.c.capacity, w.Request) == "" {
		self = max(nanos(m.c.roomForHead(w)), now)
		ats = append(ats, self)
	}
	below := 0
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
		if self >= 0 && (at < self || at == self && p.ID < m.cfg.Self) {
			below++
		}
		ats = append(ats, at)
	}
	if len(ats) < w.Size || float64(w.Size) <= m.cfg.HeadWidth*float64(len(ats)) {
		return nil
	}
	shadow := nthSmallest(ats, w.Size-1)
	if shadow == math.MaxInt64 {
		return &head{WaitingGang: w}
	}
	return &head{WaitingGang: w, shadow: time.Unix(0, shadow), known: true, mine: self >= 0 && below < w.Size}
}

// Random adverts, departures and returns of peers, under two head
// candidates that take turns: after every event the head computed from
// the kept inputs is the one a pass over the view gives.
func TestHeadInputsFollowTheView(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	m, err := New(Config{Self: "n050", Capacity: cpuNode(4), HeadWidth: 0.1})
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
			p.HeadRoom = HeadRoom{Gang: gangs[rng.Intn(2)].Gang, At: now.Add(time.Duration(rng.Intn(120)-20) * time.Second)}
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
	checked := 0
	for step := 0; step < 3000; step++ {
		stirView(m, rng, &now, 3000, 40, peer)
		w := gangs[(step/50)%2] // the candidate changes now and then
		got, want := m.shadowOf(w), shadowFromView(m, w)
		if (got == nil) != (want == nil) || got != nil && (got.known != want.known || got.mine != want.mine || !got.shadow.Equal(want.shadow)) {
			t.Fatalf("step %d, gang %s: kept inputs give %+v, the view %+v", step, w.Gang, got, want)
		}
		if got != nil && got.known {
			checked++
		}
	}
	if checked < 500 {
		t.Fatalf("only %d of the steps had a known shadow to compare", checked)
	}
	t.Logf("%d of 3000 steps compared a known shadow", checked)
}

// headBySorting is findHead as it was, sorting every candidate first: the
// reference its selection in order must agree with.
func headBySorting(m *Market) (*head, int) {
	var cands []WaitingGang
	if w := m.Waiting(); w.Gang != "" {
		cands = append(cands, w)
	}
	for _, w := range m.hin.waiting {
		cands = append(cands, w)
	}
	sort.Slice(cands, func(i, j int) bool { return waitingBefore(cands[i], cands[j]) })
	for i, w := range cands {
		if h := m.shadowOf(w); h != nil {
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
		got := m.findHead()
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
