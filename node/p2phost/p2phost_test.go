package p2phost

import (
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
)

// TestServicesAsAsked: a plain host serves neither circuit relay nor
// AutoNAT; --relay-service serves the relay's hop protocol and AutoNAT
// (v1 and v2 dial-back); --nat-traversal alone serves no relay.
func TestServicesAsAsked(t *testing.T) {
	const hop, autonat1, autonat2 = "/libp2p/circuit/relay/0.2.0/hop", "/libp2p/autonat/1.0.0", "/libp2p/autonat/2/dial-request"
	for _, tc := range []struct {
		name      string
		o         Options
		serve     []protocol.ID
		dontServe []protocol.ID
	}{
		{"plain", Options{}, nil, []protocol.ID{hop, autonat1, autonat2}},
		{"relay service", Options{RelayService: true}, []protocol.ID{hop, autonat1, autonat2}, nil},
		{"nat traversal", Options{NATTraversal: true}, nil, []protocol.ID{hop}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, _, err := crypto.GenerateEd25519Key(nil)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.o
			o.Key, o.Listen = key, []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")}
			h, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			// the relay starts once the host has taken itself for public,
			// an event handled in the background
			have := h.Mux().Protocols()
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if have = h.Mux().Protocols(); !slices.ContainsFunc(tc.serve, func(p protocol.ID) bool { return !slices.Contains(have, p) }) {
					break
				}
			}
			for _, p := range tc.serve {
				if !slices.Contains(have, p) {
					t.Errorf("does not serve %s (serves %v)", p, have)
				}
			}
			for _, p := range tc.dontServe {
				if slices.Contains(have, p) {
					t.Errorf("serves %s unasked", p)
				}
			}
		})
	}
}

// TestNoListenAddress: with a swarm key only TCP can listen.
func TestNoListenAddress(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	psk := make([]byte, 32)
	_, err := New(Options{Key: key, PSK: psk, Listen: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/udp/0/quic-v1")}})
	if err == nil {
		t.Fatal("a QUIC-only host with a swarm key started")
	}
}

// TestRelayACL: a reservation needs the asking peer allowed, a relayed
// connection both ends.
func TestRelayACL(t *testing.T) {
	ok := peer.ID("member")
	acl := relayACL(func(p peer.ID) bool { return p == ok })
	if !acl.AllowReserve(ok, nil) || acl.AllowReserve("outsider", nil) {
		t.Error("reservations: want the member only")
	}
	if !acl.AllowConnect(ok, nil, ok) || acl.AllowConnect("outsider", nil, ok) || acl.AllowConnect(ok, nil, "outsider") {
		t.Error("connections: want member to member only")
	}
}

// TestBothFlags: a relay that is itself told to traverse NAT builds.
func TestBothFlags(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	h, err := New(Options{Key: key, Listen: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")}, RelayService: true, NATTraversal: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}
