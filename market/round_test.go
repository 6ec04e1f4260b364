package market

import (
	"testing"
	"time"
)

// TestRoundClosedReportsOpenAndClose: a manager inviting itself and one
// peer reports the round once, when the peer's bid (the last answer)
// closes it, with the round's open and close times.
func TestRoundClosedReportsOpenAndClose(t *testing.T) {
	// D = 2: with fewer feasible candidates than D the manager would
	// broadcast too and wait for the whole window.
	m0, err := New(Config{Self: "n0", Capacity: cpuNode(4), Seed: 1, D: 2})
	if err != nil {
		t.Fatal(err)
	}
	m1, err := New(Config{Self: "n1", Capacity: cpuNode(4), Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	m0.Advert(t0, Peer{ID: "n1", Capacity: m1.Capacity(), Free: m1.Free()})
	m1.Advert(t0, Peer{ID: "n0", Capacity: m0.Capacity(), Free: m0.Free()})
	if err := m0.Submit(t0, "j", job("x", task("t", 1000))); err != nil {
		t.Fatal(err)
	}
	var cfp *CFP
	for _, e := range m0.Ready() {
		if s, ok := e.(Send); ok && s.To == "n1" {
			if c, ok := s.Msg.(CFP); ok {
				cfp = &c
			}
		}
		if _, ok := e.(RoundClosed); ok {
			t.Fatalf("round closed before the invited peer answered")
		}
	}
	if cfp == nil {
		t.Fatal("no CFP sent to n1")
	}
	m1.Step(t0.Add(time.Millisecond), "n0", *cfp)
	var bid *Bid
	for _, e := range m1.Ready() {
		if s, ok := e.(Send); ok && s.To == "n0" {
			if b, ok := s.Msg.(Bid); ok {
				bid = &b
			}
		}
	}
	if bid == nil {
		t.Fatal("n1 did not bid")
	}
	closed := t0.Add(3 * time.Millisecond)
	m0.Step(closed, "n1", *bid)
	var got []RoundClosed
	for _, e := range m0.Ready() {
		if rc, ok := e.(RoundClosed); ok {
			got = append(got, rc)
		}
	}
	if len(got) != 1 {
		t.Fatalf("got %d RoundClosed effects, want 1: %+v", len(got), got)
	}
	rc := got[0]
	if rc.Auction != cfp.Auction || !rc.Opened.Equal(t0) || !rc.Closed.Equal(closed) || rc.Bids != 2 || rc.Invited != 2 {
		t.Fatalf("RoundClosed %+v; want auction %v opened %v closed %v with 2 bids of 2 invited", rc, cfp.Auction, t0, closed)
	}
}

func TestStartText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-54 * time.Millisecond, "now"},
		{0, "now"},
		{1500 * time.Microsecond, "+2ms"},
		{90 * time.Second, "+1m30s"},
	} {
		if got := startText(tc.d); got != tc.want {
			t.Errorf("startText(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
