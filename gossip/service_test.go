package gossip

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/testnet/waitfor"
)

func mockHosts(t *testing.T, n int) []host.Host {
	t.Helper()
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() })
	hs := make([]host.Host, n)
	for i := range hs {
		h, err := mn.GenPeer()
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	if err := mn.ConnectAllButSelf(); err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestServiceDropsMisattributed runs two honest services and one forger
// that publishes an advert claiming to be another peer: the honest nodes
// must see each other, never the forged advert, and count the drop.
func TestServiceDropsMisattributed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := mockHosts(t, 3)
	var svcs []*Service
	var metrics []*Metrics
	for i, h := range hs[:2] {
		ps, err := pubsub.NewGossipSub(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMetrics(nil)
		cpu := int64(1000 * (i + 1))
		// A 1 s period: members expire after missed adverts, and under
		// -race on a loaded CI host a 100 ms period let them lapse before
		// both honest nodes saw each other at once.
		s, err := New(h, ps, Config{Network: "test", Interval: time.Second, Metrics: m,
			Local: func() Advert { return Advert{Capacity: resource.Vector{CPU: cpu}, Free: resource.Vector{CPU: cpu}} }})
		if err != nil {
			t.Fatal(err)
		}
		s.Start(ctx)
		t.Cleanup(func() { _ = s.Close() })
		svcs, metrics = append(svcs, s), append(metrics, m)
	}
	forgerPS, err := pubsub.NewGossipSub(ctx, hs[2])
	if err != nil {
		t.Fatal(err)
	}
	topic, err := forgerPS.Join(AdvertTopic("test"))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 30*time.Second, "honest nodes to see each other", func() bool {
		return len(svcs[0].Members()) == 1 && len(svcs[1].Members()) == 1
	})
	forged := Advert{Peer: hs[0].ID(), Boot: 99, Seq: 1, Capacity: resource.Vector{CPU: 999000}, Free: resource.Vector{CPU: 999000}, Interval: time.Second}
	b, err := forged.Encode()
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 30*time.Second, "forged advert to be dropped", func() bool {
		_ = topic.Publish(ctx, b)
		return counterValue(metrics[1].Dropped.WithLabelValues("misattributed")) > 0
	})
	m, ok := svcs[1].Member(hs[0].ID())
	if !ok || m.Advert.Capacity.CPU != 1000 {
		t.Fatalf("member %s = %+v, want the honest advert (1 core)", hs[0].ID(), m.Advert.Capacity)
	}
	if _, ok := svcs[1].Member(hs[2].ID()); ok {
		t.Fatal("forger appears in the view")
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// TestValidateHoldsRelay: a valid advert of another node is accepted only
// after Config.RelayDelay (so mesh peers' IDONTWANTs arrive before the
// relay), and a validation cancelled during the hold ignores the advert;
// this node's own adverts and invalid ones are not held.
func TestValidateHoldsRelay(t *testing.T) {
	hs := mockHosts(t, 2)
	ps, err := pubsub.NewGossipSub(context.Background(), hs[0])
	if err != nil {
		t.Fatal(err)
	}
	const hold = 300 * time.Millisecond
	s, err := New(hs[0], ps, Config{Network: "test", RelayDelay: hold,
		Local: func() Advert { return Advert{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	msgFrom := func(id peer.ID) *pubsub.Message {
		b, err := (&Advert{Peer: id, Boot: 1, Seq: 1, Interval: time.Second}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return &pubsub.Message{Message: &pb.Message{From: []byte(id), Data: b}}
	}
	other := hs[1].ID()

	start := time.Now()
	if r := s.validate(context.Background(), other, msgFrom(other)); r != pubsub.ValidationAccept {
		t.Fatalf("peer advert: %v, want accept", r)
	}
	if el := time.Since(start); el < hold {
		t.Fatalf("peer advert accepted after %v, before the %v hold", el, hold)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := s.validate(ctx, other, msgFrom(other)); r != pubsub.ValidationIgnore {
		t.Fatalf("cancelled during the hold: %v, want ignore", r)
	}

	bad := msgFrom(other)
	bad.Data = []byte{0xff}
	if r := s.validate(context.Background(), other, bad); r != pubsub.ValidationReject {
		t.Fatalf("malformed advert: %v, want reject", r)
	}
	// Own adverts are accepted at once: a cancelled context cannot turn
	// them into an ignore.
	if r := s.validate(ctx, hs[0].ID(), msgFrom(hs[0].ID())); r != pubsub.ValidationAccept {
		t.Fatalf("own advert: %v, want accept", r)
	}
}

// advertsOf returns a maker of author's adverts as pubsub delivers them,
// each newer than the last.
func advertsOf(t *testing.T, author peer.ID) func() *pubsub.Message {
	seq := uint64(0)
	return func() *pubsub.Message {
		seq++
		b, err := (&Advert{Peer: author, Boot: 1, Seq: seq, Interval: time.Second}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return &pubsub.Message{Message: &pb.Message{From: []byte(author), Data: b}}
	}
}

// TestValidateUnadmitted: an advert whose author's certificate does not
// verify is rejected (no honest relay passes it on: it checks the same
// chain), but one refused only as untimely (revoked, expired) is just
// dropped, since the relay may not have had the revocation yet and would
// otherwise be graylisted for a few of them.
func TestValidateUnadmitted(t *testing.T) {
	hs := mockHosts(t, 2)
	ps, err := pubsub.NewGossipSub(context.Background(), hs[0])
	if err != nil {
		t.Fatal(err)
	}
	var refusal error
	s, err := New(hs[0], ps, Config{Network: "test", Local: func() Advert { return Advert{} },
		Admit: func(peer.ID, []byte) error { return refusal }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	author := hs[1].ID()
	msg := advertsOf(t, author)
	for _, tc := range []struct {
		refusal error
		want    pubsub.ValidationResult
	}{
		{nil, pubsub.ValidationAccept},
		{errors.New("c1: signature does not verify"), pubsub.ValidationReject},
		{fmt.Errorf("c1: %w", auth.ErrUntimely), pubsub.ValidationIgnore},
	} {
		refusal = tc.refusal
		if r := s.validate(context.Background(), author, msg()); r != tc.want {
			t.Errorf("admission refusal %v: %v, want %v", tc.refusal, r, tc.want)
		}
	}
}

// TestFloodCut: adverts beyond an author's allowance are ignored, never
// rejected (a rejection would also sink honest relays of the same copy);
// those the author delivers itself are counted, and Flooded is told once
// when floodCut of them arrived; relayed ones are not counted.
func TestFloodCut(t *testing.T) {
	hs := mockHosts(t, 3)
	ps, err := pubsub.NewGossipSub(context.Background(), hs[0])
	if err != nil {
		t.Fatal(err)
	}
	flooded := make(chan peer.ID, 4)
	s, err := New(hs[0], ps, Config{Network: "test", RelayDelay: time.Nanosecond,
		Local: func() Advert { return Advert{} }, Flooded: func(p peer.ID) { flooded <- p }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	author, relay := hs[1].ID(), hs[2].ID()
	msg := advertsOf(t, author)
	for range floodBurst {
		if r := s.validate(context.Background(), author, msg()); r != pubsub.ValidationAccept {
			t.Fatalf("within the allowance: %v", r)
		}
	}
	for range 2 * floodCut {
		if r := s.validate(context.Background(), relay, msg()); r != pubsub.ValidationIgnore {
			t.Fatalf("relayed beyond the allowance: %v, want ignore", r)
		}
	}
	select {
	case p := <-flooded:
		t.Fatalf("%s told as a flooder for adverts others relayed", p)
	default:
	}
	for range floodCut + 10 {
		if r := s.validate(context.Background(), author, msg()); r != pubsub.ValidationIgnore {
			t.Fatalf("the author's own beyond the allowance: %v, want ignore", r)
		}
	}
	select {
	case p := <-flooded:
		if p != author {
			t.Fatalf("told of %s, want the author", p)
		}
	case <-time.After(time.Second):
		t.Fatal("the flooding author was not reported")
	}
	select {
	case <-flooded:
		t.Fatal("the flooder was reported twice")
	case <-time.After(100 * time.Millisecond):
	}
}
