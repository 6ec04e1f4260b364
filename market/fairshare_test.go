package market

import (
	"errors"
	"fmt"
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
