package market

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// headGuard protects the first queued contract that cannot start — the
// head — from the contracts queued behind it, as EASY backfilling protects
// a central queue's head: a later contract may start now only if it is
// predicted to end by the head's shadow time (when running work, ending
// at its predicted times, leaves the head room), or if the head would
// still fit at its shadow time with the later contract still running.
// Without it a node's queue is first-fit, and a large request (a whole
// GPU server) starves behind a stream of small ones that each fit in the
// room freed one piece at a time.
type headGuard struct {
	shadow time.Time
	extra  resource.Vector // the room at shadow time, less what admitted contracts keep past it
	fits   func(resource.Vector) bool
}

// newHeadGuard walks ends (the release times of what holds resources now,
// in order, with what each releases) from free at now and returns the
// guard for a head that fits when fits holds. With no release that makes
// room, the shadow time is far in the future and every contract is
// admitted: holding room for a head that cannot start would idle the node.
func newHeadGuard(now time.Time, free resource.Vector, ends []release, fits func(resource.Vector) bool) *headGuard {
	f := free.Clone()
	for i, e := range ends {
		f.Give(e.req, e.al)
		if i+1 < len(ends) && ends[i+1].at.Equal(e.at) {
			continue // the room at a time is after every release then
		}
		if fits(f.Clone()) {
			return &headGuard{shadow: e.at, extra: f, fits: fits}
		}
	}
	return &headGuard{shadow: now.Add(farFuture), extra: f, fits: fits}
}

// admits reports whether a contract taking req (allocated al) and ending
// at end may start without delaying the head, and charges what it keeps
// past the shadow time.
func (g *headGuard) admits(req resource.Request, al resource.Allocation, end time.Time) bool {
	if !end.After(g.shadow) {
		return true
	}
	v := g.extra.Clone()
	v.Take(req, al)
	if !g.fits(v.Clone()) {
		return false
	}
	g.extra = v
	return true
}

// release is resources a running contract gives back at a predicted time.
type release struct {
	at  time.Time
	req resource.Request
	al  resource.Allocation
}

// runningEnds is the running contracts' predicted releases, in order of
// time, then acceptance.
func (c *contractor) runningEnds(now time.Time) []release {
	ks := make([]*contract, 0, len(c.running))
	for _, k := range c.running {
		ks = append(ks, k)
	}
	sortByEnd(ks, now)
	out := make([]release, 0, len(ks))
	for _, k := range ks {
		out = append(out, release{endOf(k, now), k.spec.Request, k.alloc})
	}
	return out
}

// guardFor is the head guard of queued contract head on the node as it
// is now.
func (c *contractor) guardFor(head *contract, now time.Time) *headGuard {
	fits := func(free resource.Vector) bool {
		v, ok := c.minusReserves(free, "")
		if !ok {
			return false
		}
		_, why := resource.Fit(v, head.spec.Request)
		return why == ""
	}
	return newHeadGuard(now, c.free, c.runningEnds(now), fits)
}
