package p2phost

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Hole punching again. libp2p's DCUtR tries to upgrade a relayed
// connection when it is opened — three attempts by the side that received
// it — and never again. An attempt that comes too early (the other side
// has not yet learnt its public address, so it does not answer the
// hole-punching protocol) or meets a busy moment leaves the two peers
// relayed for as long as the connection lasts, and everything direct-only
// (task data) waits. So a node with hole punching on re-opens, a few times,
// a connection that stays relayed: the peer with the smaller ID closes its
// connections to the other and dials it again through the relay, and the
// other, receiving a relayed connection, punches again.

// Punch-again bounds.
const (
	// PunchAfter is how long a connection stays relayed before it is
	// re-opened.
	PunchAfter = 15 * time.Second
	// PunchRounds bounds the re-openings per peer while it stays
	// relayed: a NAT that breaks simultaneous opens would otherwise cost
	// a reconnection every PunchAfter forever.
	PunchRounds = 3
)

// punchState is what KeepPunching remembers of one peer.
type punchState struct {
	since  time.Time // when its connection was first seen relayed (this round)
	rounds int       // re-openings so far
	last   time.Time // the last re-opening
}

// forgetPunches is how long a peer's re-openings are remembered after it
// left.
const forgetPunches = time.Hour

// punchDue decides, for peer p of node self, whose connections have been
// relayed only since s.since, whether to re-open them now: after `after`.
func punchDue(self, p peer.ID, s punchState, now time.Time, after time.Duration) bool {
	return self < p && s.rounds < PunchRounds && !s.since.IsZero() && now.Sub(s.since) >= after
}

// relayedOnly reports whether every connection to p is limited (relayed).
func relayedOnly(h host.Host, p peer.ID) bool {
	conns := h.Network().ConnsToPeer(p)
	for _, c := range conns {
		if !c.Stat().Limited {
			return false
		}
	}
	return len(conns) > 0
}

// KeepPunching looks, every `every` until ctx ends, for connections that
// stayed relayed `after` (the node: PunchAfter), and re-opens them (see
// above). logf is told of each re-opening; nil logs it.
func KeepPunching(ctx context.Context, h host.Host, every, after time.Duration, logf func(p peer.ID, round int)) {
	state := map[peer.ID]*punchState{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		seen := map[peer.ID]bool{}
		for _, p := range h.Network().Peers() {
			seen[p] = true
			s := state[p]
			if s == nil {
				s = &punchState{}
				state[p] = s
			}
			if !relayedOnly(h, p) {
				s.since = time.Time{}
				continue
			}
			if s.since.IsZero() {
				s.since = now
			}
			if !punchDue(h.ID(), p, *s, now, after) {
				continue
			}
			s.rounds++
			s.since, s.last = time.Time{}, now
			if logf != nil {
				logf(p, s.rounds)
			} else {
				log.Infow("connection still relayed: re-opened to punch again", "peer", p, "round", s.rounds)
			}
			reopen(ctx, h, p)
		}
		// A peer that left keeps its rounds a while: a re-opening that
		// leaves it disconnected must not start its count afresh.
		for p, s := range state {
			if !seen[p] && (s.rounds == 0 || now.Sub(s.last) > forgetPunches) {
				delete(state, p)
			}
		}
	}
}

// reopen closes the connections to p and dials it again, through its
// relay addresses if nothing else answers.
func reopen(ctx context.Context, h host.Host, p peer.ID) {
	_ = h.Network().ClosePeer(p)
	// Connect does nothing while a connection to p is still open, and
	// closing one is not instant.
	for i := 0; i < 100 && len(h.Network().ConnsToPeer(p)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	dctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "punch again"), 10*time.Second)
	defer cancel()
	_ = h.Connect(dctx, peer.AddrInfo{ID: p})
}
