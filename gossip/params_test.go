package gossip

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// The router accepts the parameters (GossipSub validates them).
func TestGossipSubParamsAreValid(t *testing.T) {
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := pubsub.NewGossipSub(context.Background(), h, pubsub.WithGossipSubParams(GossipSubParams())); err != nil {
		t.Fatalf("NewGossipSub with GossipSubParams: %v", err)
	}
	if p := GossipSubParams(); p.D != MeshD || p.Dlo != MeshDlo || p.Dhi != MeshDhi {
		t.Fatalf("params %d/%d/%d", p.D, p.Dlo, p.Dhi)
	}
}

// Every advert, even the smallest, is announced with IDONTWANT: the relay
// hold (Config.RelayDelay) suppresses duplicates only through it.
func TestIDontWantCoversAdverts(t *testing.T) {
	b, err := (&Advert{Peer: "x", Seq: 1}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if th := GossipSubParams().IDontWantMessageThreshold; len(b) < th {
		t.Fatalf("IDONTWANT threshold %d bytes, above a %d-byte advert", th, len(b))
	}
}

// TestPeerScoreParams: the score configuration is one GossipSub takes,
// and scoring a peer on every topic does not fault.
func TestPeerScoreParams(t *testing.T) {
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p, th := PeerScore("net", nil)
	ps, err := pubsub.NewGossipSub(context.Background(), h, pubsub.WithPeerScore(p, th))
	if err != nil {
		t.Fatalf("GossipSub refused the score configuration: %v", err)
	}
	for topic, tp := range p.Topics {
		if tp.TimeInMeshQuantum <= 0 || tp.InvalidMessageDeliveriesWeight >= 0 {
			t.Errorf("%s: quantum %v, invalid weight %v", topic, tp.TimeInMeshQuantum, tp.InvalidMessageDeliveriesWeight)
		}
		if _, err := ps.Join(topic); err != nil {
			t.Fatal(err)
		}
	}
}
