package gossip

import (
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// DefaultMisses is how many advert intervals a peer may stay silent before
// the view marks it gone. With the expiry sweep running at least every half
// interval, a dead peer leaves the view within 3.5 intervals of its last
// advert.
const DefaultMisses = 3

// Member is one live peer as the view knows it.
type Member struct {
	Advert   Advert
	LastSeen time.Time // local clock when its newest advert arrived
}

// Change is what Observe did with an advert.
type Change int

// Observe outcomes.
const (
	Ignored  Change = iota // stale or duplicate: not newer than what the view holds
	Joined                 // a peer the view did not hold
	Updated                // a newer advert of a known peer
	Left                   // the peer announced a graceful leave and was removed
	Rebooted               // a known peer restarted (new boot counter): treat as left and joined again
)

// View is the membership view: the newest advert of every live peer. It is
// pure and not safe for concurrent use; Service guards it with a mutex.
type View struct {
	self    peer.ID
	misses  int
	members map[peer.ID]*Member
	// pauseAfter, when set, is the longest gap between two Expire calls
	// that is not this node's own pause (see SetPauseAfter); swept is
	// the last call's time.
	pauseAfter time.Duration
	swept      time.Time
}

// SetPauseAfter has Expire take a gap of more than d since its previous
// call for this node's own pause — its process stopped, starved of CPU —
// and not count the excess as its peers' silence: it could not have
// heard them. A node that woke from a pause would otherwise drop every
// peer at once, and place again what they run. Zero (the default) counts
// every gap.
func (v *View) SetPauseAfter(d time.Duration) { v.pauseAfter = d }

// NewView returns an empty view that ignores adverts from self and expires
// a peer after misses silent intervals (DefaultMisses when misses <= 0).
func NewView(self peer.ID, misses int) *View {
	if misses <= 0 {
		misses = DefaultMisses
	}
	return &View{self: self, misses: misses, members: map[peer.ID]*Member{}}
}

// Observe records an advert received at now and says what changed.
func (v *View) Observe(a Advert, now time.Time) Change {
	if a.Peer == v.self {
		return Ignored
	}
	m, ok := v.members[a.Peer]
	if ok && !a.Newer(m.Advert) {
		return Ignored
	}
	if a.Leaving {
		if ok {
			delete(v.members, a.Peer)
			return Left
		}
		return Ignored
	}
	v.members[a.Peer] = &Member{Advert: a, LastSeen: now}
	switch {
	case ok && a.Boot > m.Advert.Boot:
		return Rebooted
	case ok:
		return Updated
	}
	return Joined
}

// Remove drops a peer at once, e.g. when the node learns it left.
func (v *View) Remove(id peer.ID) bool {
	_, ok := v.members[id]
	delete(v.members, id)
	return ok
}

// Touch notes that a known peer was heard from at now other than by an
// advert (a message over a stream it opened or answered): it is alive,
// and its silence counts from now. Adverts travel the mesh, and may stall
// while the mesh mends (a relaying peer died, a connection is new) when
// the peer's own streams get through. It reports whether the peer is in
// the view; an unknown peer is not added, having no advert to hold.
func (v *View) Touch(id peer.ID, now time.Time) bool {
	m, ok := v.members[id]
	if ok && now.After(m.LastSeen) {
		m.LastSeen = now
	}
	return ok
}

// Expire removes every peer silent for more than misses of its own
// advertised intervals and returns their IDs in sorted order.
//
// With SetPauseAfter, it first moves every peer's LastSeen later by the
// part of the gap since its previous call beyond the limit, and reports
// that part as paused.
func (v *View) Expire(now time.Time) (gone []peer.ID, paused time.Duration) {
	if v.pauseAfter > 0 && !v.swept.IsZero() && now.Sub(v.swept) > v.pauseAfter {
		paused = now.Sub(v.swept) - v.pauseAfter
		for _, m := range v.members {
			if m.LastSeen = m.LastSeen.Add(paused); m.LastSeen.After(now) {
				m.LastSeen = now
			}
		}
	}
	if now.After(v.swept) {
		v.swept = now
	}
	for id, m := range v.members {
		if now.Sub(m.LastSeen) > time.Duration(v.misses)*m.Advert.Interval {
			gone = append(gone, id)
			delete(v.members, id)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i] < gone[j] })
	return gone, paused
}

// Get returns the member with the given ID.
func (v *View) Get(id peer.ID) (Member, bool) {
	m, ok := v.members[id]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

// Members returns every live member, ordered by peer ID.
func (v *View) Members() []Member {
	out := make([]Member, 0, len(v.members))
	for _, m := range v.members {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Advert.Peer < out[j].Advert.Peer })
	return out
}

// Len is the number of live members.
func (v *View) Len() int { return len(v.members) }
