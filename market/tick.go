package market

import (
	"sort"
	"time"
)

// NextTick reports the earliest time at which Tick has work to do: the
// earliest timer of the deadline queue (timers.go) — a bid window
// closing, an award or hold timing out, a back-off ending, a lease
// lapsing or due for renewal, a final report to repeat, a hold or
// reservation expiring, or an idle node's next steal request. It is zero
// when nothing is pending, and never later than the first Tick with
// work.
//
// A driver that ticks on a fixed period (the node ticks every 10ms) does
// not need it. A simulator of thousands of nodes does: it ticks each node
// only when NextTick says so, and asks again after every call into the
// market, since any Step, Advert, Submit or TaskExited may bring a new
// deadline nearer.
func (m *Market) NextTick() time.Time {
	m.setTimers()
	m.setUpkeepTimers()
	next, ok := m.dl.next()
	if !ok {
		return time.Time{}
	}
	if next.Before(m.now) {
		next = m.now
	}
	return next
}

// Tick advances time: closes bid windows, times out awards, opens new
// rounds and retries whose back-off ended, and fails tasks nobody can run.
// It runs in phases, each taking the timers of its kind due by then, so
// that what an earlier phase makes due (a round that ended with no bids,
// a lease that lapsed) is seen by a later one in the same Tick.
func (m *Market) Tick(now time.Time) {
	m.enter(now)
	defer m.leave()
	m.setTimers()
	// Auctions in the order of their keys' text (deterministic; each
	// key's text is built once, not per comparison).
	type named struct {
		k TaskKey
		s string
	}
	var keys []named
	m.dl.auctions.popDue(m.now, func(k timerKey) { keys = append(keys, named{k.task, k.task.String()}) })
	sort.Slice(keys, func(i, j int) bool { return keys[i].s < keys[j].s })
	for _, kn := range keys {
		k := kn.k
		m.dl.retimeAuction(k)
		a, ok := m.auctions[k]
		if !ok {
			continue
		}
		switch {
		case !a.closed && !m.now.Before(a.closeAt):
			m.auc.windowEnd(a)
		case a.awardee != nil && !m.now.Before(a.awardBy):
			m.auc.awardUnanswered(a)
		case a.closed && a.awardee == nil && !a.nextAt.IsZero() && !m.now.Before(a.nextAt):
			m.auc.newRound(a)
		}
	}
	m.gang.gangTick()
	m.runUpkeep(upkeepBeforeLeases)
	m.mgr.checkLeases()
	m.runUpkeep(upkeepAfterLeases)
	m.auc.placeReady()
}

// Paused tells the market that this node did not run for d up to now:
// its process was stopped or starved of CPU, or its loop was busy (the
// node measures the gap between its ticks; a simulator whose nodes never
// stall does not call it). A node cannot tell a peer that went silent
// from one it did not hear because it was not listening, and silence it
// could not have heard is not the peer's: every lease of a replica this
// node manages, and every award awaiting its answer, ends d later, so
// that the reports and replies queued while it stood still are seen
// before anything is judged lapsed. A peer that really went silent is
// judged d later than it would have been. Cassandra's gossiper, after a
// local pause, convicts no peer for the same reason.
func (m *Market) Paused(now time.Time, d time.Duration) {
	m.enter(now)
	defer m.leave()
	if d > 0 {
		m.mgr.pausedFor(d)
	}
}
