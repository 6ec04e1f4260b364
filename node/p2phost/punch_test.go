package p2phost

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// TestPunchDue: a connection relayed PunchAfter is re-opened by the peer
// with the smaller ID only, at most PunchRounds times.
func TestPunchDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		self, p string
		s       punchState
		want    bool
	}{
		{"relayed long enough", "a", "b", punchState{since: now.Add(-PunchAfter)}, true},
		{"relayed a moment", "a", "b", punchState{since: now.Add(-PunchAfter + time.Second)}, false},
		{"the other side re-opens", "b", "a", punchState{since: now.Add(-time.Hour)}, false},
		{"not relayed", "a", "b", punchState{}, false},
		{"last round", "a", "b", punchState{since: now.Add(-time.Hour), rounds: PunchRounds - 1}, true},
		{"rounds spent", "a", "b", punchState{since: now.Add(-time.Hour), rounds: PunchRounds}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := punchDue(peer.ID(tc.self), peer.ID(tc.p), tc.s, now, PunchAfter); got != tc.want {
				t.Fatalf("punchDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// relayedPair is two hosts on loopback, both holding a slot on relay r,
// y connected to x through it only; g, when set, gates x's connections.
func relayedPair(t *testing.T, g connmgr.ConnectionGater) (x, y host.Host) {
	ctxAll, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, _, _ := crypto.GenerateEd25519Key(nil)
	r, err := New(Options{Key: key, Listen: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")}, RelayService: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	plain := func(opts ...libp2p.Option) host.Host {
		h, err := libp2p.New(append(opts, libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.EnableRelay(), libp2p.ForceReachabilityPrivate())...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	var xopts []libp2p.Option
	if g != nil {
		xopts = append(xopts, libp2p.ConnectionGater(g))
	}
	x, y = plain(xopts...), plain()
	for _, h := range []host.Host{x, y} { // both reachable through r, as NAT'd edges are
		reserve(ctx, t, h, r)
	}
	var addrs []ma.Multiaddr
	for _, a := range r.Addrs() {
		addrs = append(addrs, a.Encapsulate(ma.StringCast("/p2p/"+r.ID().String()+"/p2p-circuit")))
	}
	if err := y.Connect(ctx, peer.AddrInfo{ID: x.ID(), Addrs: addrs}); err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Addrs() { // what y's adverts would tell x
		x.Peerstore().AddAddr(y.ID(), a.Encapsulate(ma.StringCast("/p2p/"+r.ID().String()+"/p2p-circuit")), time.Hour)
	}
	if !relayedOnly(x, y.ID()) {
		t.Fatal("x and y are not connected through the relay only")
	}
	// y dials x through the relay again whenever they are disconnected,
	// as a node's join loop and its peers' adverts do.
	go func() {
		for ctxAll.Err() == nil {
			if len(y.Network().ConnsToPeer(x.ID())) == 0 {
				c, cancel := context.WithTimeout(ctxAll, time.Second)
				_ = y.Connect(c, peer.AddrInfo{ID: x.ID(), Addrs: addrs})
				cancel()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return x, y
}

// TestKeepPunchingReopens: a connection that stays relayed is re-opened
// by the peer with the smaller ID; here a direct connection is possible,
// and a re-opening finds it (the dial that replaces a closed connection
// may go through the relay again, so it may take more than one).
func TestKeepPunchingReopens(t *testing.T) {
	x, y := relayedPair(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rounds := make(chan int, 8)
	for _, h := range []host.Host{x, y} {
		go KeepPunching(ctx, h, 50*time.Millisecond, 300*time.Millisecond, func(_ peer.ID, r int) { rounds <- r })
	}
	deadline := time.Now().Add(10 * time.Second)
	for relayedOnly(x, y.ID()) || len(x.Network().ConnsToPeer(y.ID())) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("still relayed 10 s after the re-opening was due")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(rounds); n < 1 || n > PunchRounds {
		t.Fatalf("%d re-openings, want 1 to %d", n, PunchRounds)
	}
}

// TestKeepPunchingBounded: where no direct connection can be made (x's
// gater refuses every direct one with y), the connection is re-opened
// PunchRounds times and then left relayed.
func TestKeepPunchingBounded(t *testing.T) {
	g := &directRefused{}
	x, y := relayedPair(t, g)
	g.other.Store(y.ID())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	for _, h := range []host.Host{x, y} {
		go KeepPunching(ctx, h, 50*time.Millisecond, 200*time.Millisecond, func(peer.ID, int) { n.Add(1) })
	}
	time.Sleep(time.Duration(PunchRounds+3) * 400 * time.Millisecond)
	if got := n.Load(); got != PunchRounds {
		t.Fatalf("%d re-openings, want %d", got, PunchRounds)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !relayedOnly(x, y.ID()) {
		if time.Now().After(deadline) {
			t.Fatal("x and y are not connected (relayed) after the re-openings")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// directRefused refuses every connection with peer other that does not
// go through a relay.
type directRefused struct{ other atomic.Value }

func (g *directRefused) refuse(p peer.ID, a ma.Multiaddr) bool {
	o, _ := g.other.Load().(peer.ID)
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return p == o && err != nil
}

func (g *directRefused) InterceptPeerDial(peer.ID) bool { return true }
func (g *directRefused) InterceptAddrDial(p peer.ID, a ma.Multiaddr) bool {
	return !g.refuse(p, a)
}
func (g *directRefused) InterceptAccept(network.ConnMultiaddrs) bool { return true }
func (g *directRefused) InterceptSecured(_ network.Direction, p peer.ID, c network.ConnMultiaddrs) bool {
	return !g.refuse(p, c.RemoteMultiaddr())
}
func (g *directRefused) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return true, 0
}
