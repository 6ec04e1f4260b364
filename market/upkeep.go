package market

import "time"

// The node's upkeep: its periodic work other than auctions, gangs and
// jobs, one item per row, each with the function Tick runs and the one
// that says when it next has work (its timer in the deadline queue),
// named side by side here and written side by side in the item's file.
// Tick runs every item, in this order, on every call: each looks at its
// own clock first and does nothing before it is due, and some keep a
// clock of their own (heartbeat's and maybeSteal's gates, advanced when
// polled), which a simulator's figures depend on. The cluster's
// TickEvery check (market/cluster) is what holds each pair together: a
// Tick before NextTick that does something is a next that is late.
type upkeepItem struct {
	name string
	run  func(*Market)
	// next is when run next has work; false for never. nil: the row
	// above's next covers it.
	next func(*Market) (time.Time, bool)
}

var upkeepBeforeLeases = []upkeepItem{
	{"reclaim", func(m *Market) { m.fo.reclaimDue() }, func(m *Market) (time.Time, bool) { return m.fo.nextReclaim() }},
	{"copies", func(m *Market) { m.rep.refresh(m.now) }, func(m *Market) (time.Time, bool) { return m.rep.nextAt(len(m.dirty) > 0, len(m.active) > 0) }},
	{"replicate", func(m *Market) {
		if e := m.rep.due(m.now); e != nil {
			m.emit(e)
		}
	}, nil},
	{"batches", func(m *Market) { m.rep.expire(m.now) }, nil},
	{"rehome", func(m *Market) { m.fo.rehomeDue() }, func(m *Market) (time.Time, bool) { return m.fo.nextRehome() }},
	{"claims", func(m *Market) { m.sp.claimsDue() }, func(m *Market) (time.Time, bool) { return m.sp.nextClaim() }},
	{"recheck", func(m *Market) { m.fo.recheckCopies() }, func(m *Market) (time.Time, bool) { return m.fo.copies.recheck, !m.fo.copies.recheck.IsZero() }},
	{"expire", func(m *Market) { m.fo.expireCopies() }, func(m *Market) (time.Time, bool) { return m.fo.nextExpiry() }},
	{"holds", func(m *Market) { m.con.expireHolds() }, func(m *Market) (time.Time, bool) { return m.con.nextHoldExpiry() }},
}

var upkeepAfterLeases = []upkeepItem{
	{"heartbeat", func(m *Market) { m.con.heartbeat() }, func(m *Market) (time.Time, bool) { return m.con.nextBeat() }},
	{"retention", func(m *Market) { m.mgr.forgetFinished() }, func(m *Market) (time.Time, bool) { return m.mgr.nextForget() }},
	{"results", func(m *Market) { m.con.repeatResults() }, func(m *Market) (time.Time, bool) { return m.con.resultsDue, len(m.con.results) > 0 }},
	{"usage", func(m *Market) { m.publishUsage() }, func(m *Market) (time.Time, bool) { return m.nextUsage() }},
	{"steal", func(m *Market) { m.con.maybeSteal() }, func(m *Market) (time.Time, bool) { return m.con.nextSteal() }},
}

// runUpkeep runs items in order, timing the jobs they touch between them
// as they go (a later phase of Tick takes the due ones).
func (m *Market) runUpkeep(items []upkeepItem) {
	for _, it := range items {
		it.run(m)
	}
}

// setUpkeepTimers sets each upkeep item's timer from its next function.
func (m *Market) setUpkeepTimers() {
	d := &m.dl
	d.upkeep = d.upkeep[:0]
	for _, items := range [][]upkeepItem{upkeepBeforeLeases, upkeepAfterLeases} {
		for _, it := range items {
			if it.next != nil {
				at, ok := it.next(m)
				d.upkeep = append(d.upkeep, upkeepTimer{at, ok})
			}
		}
	}
}
