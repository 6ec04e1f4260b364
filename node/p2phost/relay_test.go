package p2phost

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
)

// TestRelayLimits (issue 25, done-when 5): a --relay-service host on
// loopback relays at most RelayData bytes each way on one relayed
// connection, then resets it, and refuses more than RelayMaxCircuits
// relayed connections to one peer at once.
func TestRelayLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key, _, _ := crypto.GenerateEd25519Key(nil)
	relay, err := New(Options{Key: key, Listen: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")}, RelayService: true})
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	plain := func() host.Host {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.EnableRelay(), libp2p.ForceReachabilityPrivate())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	behind, caller := plain(), plain()
	rsvp := reserve(ctx, t, behind, relay)
	if rsvp.LimitData != RelayData || rsvp.LimitDuration != RelayDuration {
		t.Errorf("the relay grants %d bytes and %v per connection, want %d and %v", rsvp.LimitData, rsvp.LimitDuration, RelayData, RelayDuration)
	}
	const proto = "/agora-test/sink"
	got := make(chan int64, 1)
	behind.SetStreamHandler(proto, func(s network.Stream) {
		n, _ := io.Copy(io.Discard, s)
		got <- n
		s.Reset()
	})
	circuit := ma.StringCast("/p2p/" + relay.ID().String() + "/p2p-circuit")
	var addrs []ma.Multiaddr
	for _, a := range relay.Addrs() {
		addrs = append(addrs, a.Encapsulate(circuit))
	}
	if err := caller.Connect(ctx, peer.AddrInfo{ID: behind.ID(), Addrs: addrs}); err != nil {
		t.Fatal(err)
	}
	s, err := caller.NewStream(network.WithAllowLimitedConn(ctx, "test"), behind.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	var sent int64
	for sent < 4*RelayData {
		n, err := s.Write(buf)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	s.Close()
	var delivered int64
	select {
	case delivered = <-got:
	case <-ctx.Done():
		t.Fatal("the receiver never saw the stream end")
	}
	t.Logf("sent %d MiB into a relayed stream; %.1f MiB delivered before the relay reset it (limit %d MiB)", sent>>20, float64(delivered)/(1<<20), RelayData>>20)
	if delivered > RelayData || delivered < RelayData/2 {
		t.Errorf("%d bytes relayed, want at most the limit %d and not far below", delivered, RelayData)
	}
	// Circuits: at most RelayMaxCircuits relayed connections to one peer
	// at once (the one above is closed first, and given time to go).
	_ = caller.Network().ClosePeer(behind.ID())
	time.Sleep(300 * time.Millisecond)
	ok := 0
	for i := 0; i < RelayMaxCircuits+4; i++ {
		c := plain()
		if c.Connect(ctx, peer.AddrInfo{ID: behind.ID(), Addrs: addrs}) == nil {
			ok++
		}
	}
	t.Logf("%d of %d callers got a relayed connection to the same peer (limit %d)", ok, RelayMaxCircuits+4, RelayMaxCircuits)
	if ok != RelayMaxCircuits {
		t.Errorf("%d relayed connections to one peer, want the limit %d", ok, RelayMaxCircuits)
	}
}

// reserve connects h to relay and takes a slot on it, trying for 10 s.
func reserve(ctx context.Context, t *testing.T, h, relay host.Host) *client.Reservation {
	t.Helper()
	ri := peer.AddrInfo{ID: relay.ID(), Addrs: relay.Addrs()}
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = h.Connect(ctx, ri); err == nil {
			rsvp, err := client.Reserve(ctx, h, ri)
			if err == nil {
				return rsvp
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reservation on the relay: %v", err)
		}
	}
}
