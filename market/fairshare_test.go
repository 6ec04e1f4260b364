package market

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/fairshare"
)

// queued is a contract of owner's, as the contractor accepts one.
func queued(m *Market, job, owner string, prio int) *contract {
	k := &contract{spec: TaskSpec{TaskOffer: TaskOffer{Key: TaskKey{Job: job, Task: "t"}, Priority: prio,
		Request: resource.Request{CPU: 1000}}, Owner: owner, Epoch: 1}, manager: "mgr", accepted: m.now}
	m.con.enqueue(k)
	return k
}

func queueOrder(m *Market) []string {
	var out []string
	for _, k := range m.con.queue {
		out = append(out, k.spec.Key.Job)
	}
	return out
}

// TestFairShareOrdersTheQueue: between users of equal factors the queue
// is first come; once alice has used the node, bob's later tasks go
// ahead of her queued ones — but not ahead of a higher priority — and a
// peer's summary that makes bob the heavy user turns the order back.
func TestFairShareOrdersTheQueue(t *testing.T) {
	m, err := New(Config{Self: "n0", Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	m.now = t0
	// The node is busy: nothing starts while the test orders the queue.
	m.con.free = resource.Vector{}
	for _, j := range []struct {
		job, owner string
		prio       int
	}{{"a1", "alice", 5}, {"a2", "alice", 5}, {"b1", "bob", 5}, {"b2", "bob", 5}, {"c1", "carol", 7}} {
		queued(m, j.job, j.owner, j.prio)
	}
	if got := queueOrder(m); !equal(got, []string{"c1", "a1", "a2", "b1", "b2"}) {
		t.Fatalf("with no usage: %v, want priority then first come", got)
	}
	// alice's earlier task ran an hour on 4 cores here.
	ran := &contract{spec: TaskSpec{TaskOffer: TaskOffer{Request: resource.Request{CPU: 4000}}, Owner: "alice"}}
	m.con.charge(ran, time.Hour)
	if f := m.FairShare("alice"); f != 0.125 { // all of the usage, a third of the shares: 2^-3
		t.Fatalf("alice's factor %v, want 0.125", f)
	}
	if f := m.FairShare("bob"); f != 1 {
		t.Fatalf("bob's factor %v, want 1", f)
	}
	if got := queueOrder(m); !equal(got, []string{"c1", "b1", "b2", "a1", "a2"}) {
		t.Fatalf("after alice's usage: %v, want bob's tasks before alice's, carol's priority first", got)
	}
	// Its summary goes out, and once more only after PublishEvery.
	m.out = nil
	m.Tick(m.now)
	sums := published(m)
	if len(sums) != 1 || sums[0].Users["alice"].Usage != 4*3600 || sums[0].Node != "n0" {
		t.Fatalf("published %+v", sums)
	}
	m.out = nil
	m.con.charge(ran, time.Minute)
	m.Tick(m.now.Add(time.Second))
	if len(published(m)) != 0 {
		t.Fatal("published again within PublishEvery")
	}
	m.Tick(m.now.Add(m.cfg.FairShare.PublishEvery))
	if len(published(m)) != 1 {
		t.Fatal("the charge after the first summary never went out")
	}
	// A peer says bob used ten times more there: bob is now the heavy
	// user and his tasks go back behind alice's.
	peer := fairshare.Summary{Node: "n1", At: m.now, HalfLife: m.cfg.FairShare.HalfLife,
		Users: map[string]fairshare.Entry{"bob": {Usage: 40 * 3600 * 10, Share: 1}}}
	m.Step(m.now, "n1", UsageSummary{peer})
	if got := queueOrder(m); !equal(got, []string{"c1", "a1", "a2", "b1", "b2"}) {
		t.Fatalf("after n1's summary: %v, want alice's before bob's", got)
	}
	// A summary relayed by another node, or older than the one kept, is
	// refused.
	m.out = nil
	m.Step(m.now, "n2", UsageSummary{peer})
	m.Step(m.now, "n1", UsageSummary{peer})
	refused := 0
	for _, e := range m.out {
		if r, ok := e.(Refused); ok && r.Reason == RefuseUsage {
			refused++
		}
	}
	if refused != 1 { // n2's never reaches the fair share: Step drops a forged sender
		t.Fatalf("refused %d summaries, want 1 (the stale one): %v", refused, m.out)
	}
}

func published(m *Market) []fairshare.Summary {
	var out []fairshare.Summary
	for _, e := range m.out {
		if p, ok := e.(PublishUsage); ok {
			out = append(out, p.Summary.Summary)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFairShareBookAccept: what a book refuses of a peer's summary.
func TestFairShareBookAccept(t *testing.T) {
	b := fairshare.NewBook(time.Hour, time.Minute)
	good := fairshare.Summary{Node: "p", At: t0, HalfLife: time.Hour, Users: map[string]fairshare.Entry{"u": {Usage: 10, Share: 1}}}
	for _, tc := range []struct {
		name string
		edit func(s *fairshare.Summary)
		from string
		want error
	}{
		{"another sender", func(*fairshare.Summary) {}, "q", fairshare.ErrSender},
		{"future", func(s *fairshare.Summary) { s.At = t0.Add(time.Hour) }, "p", fairshare.ErrFuture},
		{"half-life", func(s *fairshare.Summary) { s.HalfLife = time.Minute }, "p", fairshare.ErrHalfLife},
		{"negative usage", func(s *fairshare.Summary) { s.Users = map[string]fairshare.Entry{"u": {Usage: -1, Share: 1}} }, "p", fairshare.ErrMalformed},
		{"zero share", func(s *fairshare.Summary) { s.Users = map[string]fairshare.Entry{"u": {Usage: 1}} }, "p", fairshare.ErrMalformed},
		{"empty user", func(s *fairshare.Summary) { s.Users = map[string]fairshare.Entry{"": {Usage: 1, Share: 1}} }, "p", fairshare.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.edit(&s)
			if err := b.Accept(t0, tc.from, s); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if err := b.Accept(t0, "p", good); err != nil {
		t.Fatal(err)
	}
	if err := b.Accept(t0, "p", good); !errors.Is(err, fairshare.ErrStale) {
		t.Fatalf("a repeat: %v", err)
	}
	// An hour on, a half-life: the peer's usage counts half.
	if u := b.Usage(t0.Add(time.Hour))["u"]; u != 5 {
		t.Fatalf("decayed usage %v, want 5", u)
	}
}

// TestFairShareBookDecay: usage charged at different times adds up as
// decayed to now, across a move of the book's reference time (after
// 400 half-lives), and the factors are the users' parts of it.
func TestFairShareBookDecay(t *testing.T) {
	b := fairshare.NewBook(time.Hour, time.Minute)
	b.Charge(t0, "a", 1, 8)
	b.Charge(t0.Add(2*time.Hour), "b", 1, 2)
	u := b.Usage(t0.Add(2 * time.Hour))
	if u["a"] != 2 || u["b"] != 2 {
		t.Fatalf("usage two half-lives on: %v, want a 2 (8 halved twice), b 2", u)
	}
	if f := b.Factors(t0); f["a"] != 0.5 || f["b"] != 0.5 {
		t.Fatalf("equal usage, equal shares: factors %v, want 0.5 each", f)
	}
	later := t0.Add(500 * time.Hour) // past the reference's range
	b.Charge(later, "a", 1, 3)
	if u := b.Usage(later); u["a"] != 3 || len(u) != 1 {
		t.Fatalf("500 half-lives on: %v, want only a's new 3 (the old usage decayed to nothing)", u)
	}
	if s := b.Local("n0", later); s.Users["a"].Usage != 3 {
		t.Fatalf("local summary %+v", s)
	}
}

// TestFairShareOrdersGangs: the head's candidates and the reservations
// are ordered by their owners' fair share too, as the queue is: with no
// usage the gang waiting longest goes first; once alice has used the
// network, bob's gang that became ready an hour later goes ahead of
// hers (a factor of 1 against 0.25 outweighs an hour's age), but not one
// of a higher priority, nor a gang whose owner is unknown (an open
// network, a Reserve), which keeps the ready-time order. The order
// leaves the first candidate kept from the adverts when the factors
// change.
func TestFairShareOrdersGangs(t *testing.T) {
	m, err := New(Config{Self: "n0", Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	m.now = t0
	alice := WaitingGang{Gang: "a/t", Size: 4, Priority: 5, Since: t0.Add(-2 * time.Hour), Owner: "alice"}
	bob := WaitingGang{Gang: "b/t", Size: 4, Priority: 5, Since: t0.Add(-time.Hour), Owner: "bob"}
	if !m.gang.waitingBefore(alice, bob) {
		t.Fatal("with no usage alice's older gang does not go first")
	}
	m.gang.peerAdvertised(&Peer{ID: "pa", Waiting: alice})
	m.gang.peerAdvertised(&Peer{ID: "pb", Waiting: bob})
	m.fs.NoteShare("bob", 1)
	if got := m.gang.hin.firstWaiting(m.gang.waitingBefore); got.Gang != alice.Gang {
		t.Fatalf("first candidate %s, want alice's", got.Gang)
	}

	m.con.charge(&contract{spec: TaskSpec{TaskOffer: TaskOffer{Request: resource.Request{CPU: 4000}}, Owner: "alice"}}, time.Hour)
	if fa, fb := m.FairShare("alice"), m.FairShare("bob"); fa != 0.25 || fb != 1 {
		t.Fatalf("factors alice %v bob %v, want 0.25 and 1", fa, fb)
	}
	if !m.gang.waitingBefore(bob, alice) || m.gang.waitingBefore(alice, bob) {
		t.Error("after alice's usage bob's later gang does not go first")
	}
	if h := m.gang.findHead(); h != nil {
		t.Fatalf("a head with no capable peers: %+v", h)
	}
	if got := m.gang.hin.firstWaiting(m.gang.waitingBefore); got.Gang != bob.Gang {
		t.Errorf("first candidate kept from the adverts %s after the factors changed, want bob's", got.Gang)
	}
	high := alice
	high.Priority = 7
	if !m.gang.waitingBefore(high, bob) {
		t.Error("bob's gang went ahead of a higher priority")
	}
	anon := bob
	anon.Owner = ""
	if !m.gang.waitingBefore(alice, anon) {
		t.Error("a gang of no known owner was ordered by fair share")
	}
	ra := &reservation{gang: alice.Gang, priority: 5, owner: "alice", since: alice.Since}
	rb := &reservation{gang: bob.Gang, priority: 5, owner: "bob", since: bob.Since}
	if !m.con.reservedBefore(rb, ra) {
		t.Error("reservations are not ordered by fair share")
	}
}

// TestFairShareGangOrderIsTransitive: among gangs of known owners the
// head's order is transitive, so the first of a set does not depend on
// the order a node reads its peers' adverts in (a map's, in
// headInputs.firstWaiting). With the age term capped at MaxAge, three
// gangs whose ready times lie more than a day apart could each go before
// the next, and one seed of a simulation gave other figures from run to
// run. Random triples over five users of five factors and ready times
// within six days; then every order of reading a set of eight gives one
// first gang.
func TestFairShareGangOrderIsTransitive(t *testing.T) {
	m, err := New(Config{Self: "n0", Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	m.now = t0
	users := []string{"u0", "u1", "u2", "u3", "u4"}
	for i, u := range users {
		m.con.charge(&contract{spec: TaskSpec{TaskOffer: TaskOffer{Request: resource.Request{CPU: 1000}}, Owner: u}}, time.Duration(i*i+1)*time.Hour)
	}
	rng := rand.New(rand.NewSource(1))
	gang := func(i int) WaitingGang {
		return WaitingGang{Gang: fmt.Sprintf("g%d/t", i), Size: 4, Priority: 5,
			Since: t0.Add(-time.Duration(rng.Int63n(int64(6 * 24 * time.Hour)))), Owner: users[rng.Intn(len(users))]}
	}
	before := m.gang.waitingBefore
	for n := 0; n < 20000; n++ {
		a, b, c := gang(3*n), gang(3*n+1), gang(3*n+2)
		if before(a, b) && before(b, c) && !before(a, c) {
			t.Fatalf("not transitive: %+v before %+v before %+v, but not the first before the last", a, b, c)
		}
	}
	set := make([]WaitingGang, 8)
	for i := range set {
		set[i] = gang(i)
	}
	first := func(order []int) string {
		var f WaitingGang
		for _, i := range order {
			if f.Gang == "" || before(set[i], f) {
				f = set[i]
			}
		}
		return f.Gang
	}
	want := first([]int{0, 1, 2, 3, 4, 5, 6, 7})
	for n := 0; n < 2000; n++ {
		if got := first(rng.Perm(len(set))); got != want {
			t.Fatalf("first gang %s read in one order, %s in another", want, got)
		}
	}
}

// TestFairShareBookDeltas: a delta names the users charged since the
// sender's last full summary and applies only over that full summary; a
// later delta makes good a lost one; a full summary replaces what is
// kept; a node sends a full one when most of its users changed.
func TestFairShareBookDeltas(t *testing.T) {
	s := fairshare.NewBook(time.Hour, time.Minute)
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		s.Charge(t0, u, 1, 10)
	}
	full := s.Summarize("p", t0, false)
	if full.Delta() || len(full.Users) != 5 {
		t.Fatalf("first summary %+v, want a full one of 5 users", full)
	}
	s.Charge(t0.Add(time.Minute), "a", 1, 5)
	d1 := s.Summarize("p", t0.Add(time.Minute), false)
	s.Charge(t0.Add(2*time.Minute), "b", 1, 5)
	d2 := s.Summarize("p", t0.Add(2*time.Minute), false)
	if !d1.Delta() || !d1.Base.Equal(t0) || len(d1.Users) != 1 || len(d2.Users) != 2 {
		t.Fatalf("deltas %+v and %+v, want a's over t0, then a's and b's", d1, d2)
	}

	r := fairshare.NewBook(time.Hour, time.Minute)
	if err := r.Accept(t0.Add(2*time.Minute), "p", d1); !errors.Is(err, fairshare.ErrNoBase) {
		t.Fatalf("a delta before its full summary: %v, want ErrNoBase", err)
	}
	if err := r.Accept(t0.Add(2*time.Minute), "p", full); err != nil {
		t.Fatal(err)
	}
	// d1 is lost; d2 carries a's charge too.
	if err := r.Accept(t0.Add(2*time.Minute), "p", d2); err != nil {
		t.Fatal(err)
	}
	if err := r.Accept(t0.Add(2*time.Minute), "p", d1); !errors.Is(err, fairshare.ErrStale) {
		t.Fatalf("the lost delta arriving late: %v, want ErrStale", err)
	}
	now := t0.Add(2 * time.Minute)
	if got, want := r.Usage(now), s.Usage(now); !sameUsage(got, want) {
		t.Fatalf("receiver %v, sender %v", got, want)
	}
	// Three of five users charged: a full summary goes instead, and the
	// deltas over the old one no longer apply.
	s.Charge(now, "c", 1, 1)
	full2 := s.Summarize("p", now.Add(time.Second), false)
	if full2.Delta() || len(full2.Users) != 5 {
		t.Fatalf("with 3 of 5 users changed: %+v, want a full summary", full2)
	}
	s.Charge(now, "d", 1, 1)
	d3 := s.Summarize("p", now.Add(2*time.Second), false)
	if !d3.Base.Equal(full2.At) || len(d3.Users) != 1 {
		t.Fatalf("delta %+v, want d's over the new full summary", d3)
	}
	if err := r.Accept(now.Add(2*time.Second), "p", d3); !errors.Is(err, fairshare.ErrNoBase) {
		t.Fatalf("a delta over a full summary missed: %v, want ErrNoBase", err)
	}
	bad := d3
	bad.Base = bad.At.Add(time.Second)
	if err := r.Accept(now.Add(2*time.Second), "p", bad); !errors.Is(err, fairshare.ErrMalformed) {
		t.Fatalf("a delta over a later summary: %v, want ErrMalformed", err)
	}
	if f := s.Summarize("p", now.Add(3*time.Second), true); f.Delta() {
		t.Fatal("asked for a full summary, got a delta")
	}
}

// TestFairShareDeltasConverge: over many seeds of charges, summaries,
// lost and reordered messages, whenever a receiver applied the newest
// summary a sender sent, it knows the sender's usage exactly; a refused
// one changes nothing.
func TestFairShareDeltasConverge(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := fairshare.NewBook(time.Hour, time.Minute)
		r := fairshare.NewBook(time.Hour, time.Minute)
		now := t0
		var late []fairshare.Summary // held back: arrive after a newer one
		applied := 0
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(1+rng.Intn(600)) * time.Second)
			for n := rng.Intn(3); n > 0; n-- {
				s.Charge(now, fmt.Sprintf("u%d", rng.Intn(12)), 1, float64(1+rng.Intn(1000)))
			}
			if !s.HasLocal() || rng.Intn(3) == 0 {
				continue
			}
			sum := s.Summarize("p", now, rng.Intn(10) == 0)
			before := r.Usage(now)
			switch x := rng.Float64(); {
			case x < 0.2: // lost
				continue
			case x < 0.3:
				late = append(late, sum)
				continue
			}
			err := r.Accept(now, "p", sum)
			switch {
			case err == nil:
				applied++
				if got, want := r.Usage(now), s.Usage(now); !sameUsage(got, want) {
					t.Fatalf("seed %d step %d: after %+v the receiver knows %v, the sender has %v", seed, step, sum, got, want)
				}
				for _, old := range late { // overtaken on the way
					if err := r.Accept(now, "p", old); !errors.Is(err, fairshare.ErrStale) && !errors.Is(err, fairshare.ErrNoBase) {
						t.Fatalf("seed %d: a summary older than one applied: %v, want ErrStale or ErrNoBase", seed, err)
					} else if !sameUsage(r.Usage(now), s.Usage(now)) {
						t.Fatalf("seed %d: refused %v, yet the book changed", seed, err)
					}
				}
			case errors.Is(err, fairshare.ErrNoBase) && sum.Delta():
				if !sameUsage(r.Usage(now), before) {
					t.Fatalf("seed %d: a delta without its base changed the book", seed)
				}
			default:
				t.Fatalf("seed %d: %v", seed, err)
			}
			late = late[:0]
		}
		if applied == 0 {
			t.Fatalf("seed %d: nothing applied", seed)
		}
	}
}

// sameUsage: equal up to rounding.
func sameUsage(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for u, v := range a {
		if w, ok := b[u]; !ok || math.Abs(v-w) > 1e-9*math.Max(1, math.Abs(w)) {
			return false
		}
	}
	return true
}

// TestFairSharePublishesDeltas: a node's first summary is full; usage
// charged later goes out as a delta of the users charged; a peer joining
// the view, or RefreshEvery passing, sends a full one; and a delta over
// a full summary the receiver missed is dropped without counting as a
// refusal (the sender did nothing wrong).
func TestFairSharePublishesDeltas(t *testing.T) {
	m, err := New(Config{Self: "n0", Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	m.now = t0
	cfg := m.cfg.FairShare
	ran := func(owner string) *contract {
		return &contract{spec: TaskSpec{TaskOffer: TaskOffer{Request: resource.Request{CPU: 1000}}, Owner: owner}}
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		m.con.charge(ran(u), time.Minute)
	}
	next := func(at time.Time) (fairshare.Summary, bool) {
		m.out = nil
		m.Tick(at)
		sums := published(m)
		if len(sums) > 1 {
			t.Fatalf("%d summaries at once", len(sums))
		}
		if len(sums) == 0 {
			return fairshare.Summary{}, false
		}
		return sums[0], true
	}
	first, ok := next(m.now)
	if !ok || first.Delta() || len(first.Users) != 4 {
		t.Fatalf("first summary %+v, want a full one of 4 users", first)
	}
	m.con.charge(ran("a"), time.Minute)
	d, ok := next(m.now.Add(cfg.PublishEvery))
	if !ok || !d.Delta() || !d.Base.Equal(first.At) || len(d.Users) != 1 || math.Abs(d.Users["a"].Usage-120) > 0.01 {
		t.Fatalf("after a's charge: %+v, want a delta of a's 120 core-seconds (decayed 30 s) over the first", d)
	}
	if _, ok := next(m.now.Add(cfg.PublishEvery)); ok {
		t.Fatal("a summary with nothing charged before the refresh")
	}
	m.Advert(m.now, Peer{ID: "n9", Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	if s, ok := next(m.now.Add(cfg.PublishEvery)); !ok || s.Delta() || len(s.Users) != 4 {
		t.Fatalf("after a peer joined: %+v, want a full summary", s)
	}
	full := m.now
	if _, ok := next(full.Add(cfg.RefreshEvery - time.Second)); ok {
		t.Fatal("refreshed early")
	}
	if s, ok := next(full.Add(cfg.RefreshEvery)); !ok || s.Delta() {
		t.Fatalf("at the refresh: %+v, want a full summary", s)
	}

	m.out = nil
	orphan := fairshare.Summary{Node: "n1", At: m.now, Base: m.now.Add(-time.Hour), HalfLife: cfg.HalfLife,
		Users: map[string]fairshare.Entry{"b": {Usage: 1, Share: 1}}}
	m.Step(m.now, "n1", UsageSummary{orphan})
	for _, e := range m.out {
		if r, ok := e.(Refused); ok {
			t.Fatalf("a delta over a missed full summary counted as refused: %+v", r)
		}
	}
}
