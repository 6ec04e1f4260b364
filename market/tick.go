package market

import (
	"sort"
	"time"
)

// NextTick reports the earliest time at which Tick has work to do: a bid
// window closing, an award or hold timing out, a back-off ending, a lease
// lapsing or due for renewal, a final report to repeat, a hold or
// reservation expiring, or an idle node's next steal request. It is zero
// when nothing is pending, and may be earlier than needed (a Tick then
// does nothing) but never later.
//
// A driver that ticks on a fixed period (the node ticks every 10ms) does
// not need it. A simulator of thousands of nodes does: it ticks each node
// only when NextTick says so, and asks again after every call into the
// market, since any Step, Advert, Submit or TaskExited may bring a new
// deadline nearer.
func (m *Market) NextTick() time.Time {
	var next time.Time
	at := func(t time.Time) {
		if t.IsZero() {
			t = m.now // "due now" callers pass the zero time
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	// manager: auctions, gangs, placement, leases
	for _, a := range m.auctions {
		switch {
		case !a.closed:
			at(a.closeAt)
		case a.awardee != nil:
			at(a.awardBy)
		case !a.nextAt.IsZero():
			at(a.nextAt)
		}
	}
	for _, g := range m.gangs {
		switch {
		case g.holding:
			at(g.holdBy)
		case g.nextAt.IsZero():
			at(g.closeAt)
		default:
			at(g.nextAt)
		}
	}
	for _, id := range m.active {
		j := m.jobs[id]
		if j == nil || j.State.Terminal() {
			continue
		}
		// a gang's replicas are consecutive: look its auction up once
		gangOf, inGang, looked := "", false, false
		for i := range j.Tasks {
			t := &j.Tasks[i]
			switch t.State {
			case TaskPending:
				if !looked || t.Key.Task != gangOf {
					gangOf, inGang, looked = t.Key.Task, m.gangs[gangID(t.Key.Job, t.Key.Task)] != nil, true
				}
				if inGang || m.auctions[t.Key] != nil {
					continue
				}
				if t.NotBefore.After(m.now) {
					at(t.NotBefore)
				} else {
					at(m.now)
				}
			case TaskAwarded, TaskRunning:
				if !t.LeaseUntil.IsZero() {
					at(t.LeaseUntil)
				}
			}
		}
	}
	if len(m.retired) > 0 && m.cfg.JobRetention >= 0 {
		at(m.retired[0].at.Add(m.cfg.JobRetention)) // forgetFinished
	}
	// failover: copies to send, copies to drop, searches, a reclaim
	if t, ok := m.nextCopies(); ok {
		at(t)
	}
	if t := m.copies.recheck; !t.IsZero() {
		at(t)
	}
	if t, ok := m.nextExpiry(); ok {
		at(t)
	}
	if t, ok := m.nextRehome(); ok {
		at(t)
	}
	if t, ok := m.nextReclaim(); ok {
		at(t)
	}
	if t, ok := m.nextClaim(); ok {
		at(t)
	}
	// contractor: lease renewals, repeated results, holds, reservations
	c := &m.c
	var beat time.Time
	due := func(k *contract) {
		if t := k.beat.Add(m.cfg.LeaseEvery); beat.IsZero() || t.Before(beat) {
			beat = t
		}
	}
	for _, k := range c.running {
		if k.stopReason == "" {
			due(k)
		}
	}
	for _, k := range c.queue {
		due(k)
	}
	if !beat.IsZero() {
		// heartbeat looks at most every LeaseEvery/4
		if gate := m.lastBeat.Add(m.cfg.LeaseEvery / 4); gate.After(beat) {
			beat = gate
		}
		at(beat)
	}
	if len(c.results) > 0 {
		at(c.resultsDue)
	}
	for _, h := range c.holds {
		at(h.expires)
	}
	for _, r := range c.reserves {
		at(r.until)
	}
	if t, ok := m.nextSteal(); ok {
		at(t)
	}
	if !next.IsZero() && next.Before(m.now) {
		next = m.now
	}
	return next
}

// nextSteal is when maybeSteal would next send a request, if the node
// stays as it is; false when it would not.
func (m *Market) nextSteal() (time.Time, bool) {
	c := &m.c
	if m.cfg.NoSteal || m.draining || len(c.queue) > 0 || len(c.holds) > 0 {
		return time.Time{}, false
	}
	if room, _ := m.stealRoom(); m.loaded == 0 || room.CPU < 1000 {
		return time.Time{}, false
	}
	gap := m.stealGap
	if c.accepted != m.stealMark || gap == 0 {
		gap = m.cfg.StealEvery
	}
	return m.lastSteal.Add(gap), true
}

// Tick advances time: closes bid windows, times out awards, opens new
// rounds and retries whose back-off ended, and fails tasks nobody can run.
func (m *Market) Tick(now time.Time) {
	m.enter(now)
	defer m.leave()
	// Visit the auctions in the order of their keys' text (deterministic;
	// each key's text is built once, not per comparison).
	type named struct {
		k TaskKey
		s string
	}
	keys := make([]named, 0, len(m.auctions))
	for k := range m.auctions {
		keys = append(keys, named{k, k.String()})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].s < keys[j].s })
	for _, kn := range keys {
		k := kn.k
		a, ok := m.auctions[k]
		if !ok {
			continue
		}
		switch {
		case !a.closed && !m.now.Before(a.closeAt):
			m.windowEnd(a)
		case a.awardee != nil && !m.now.Before(a.awardBy):
			m.awardUnanswered(a)
		case a.closed && a.awardee == nil && !a.nextAt.IsZero() && !m.now.Before(a.nextAt):
			m.newRound(a)
		}
	}
	m.gangTick()
	m.reclaimDue()
	m.refreshCopies()
	m.replicateDue()
	m.expireBatches()
	m.rehomeDue()
	m.claimsDue()
	m.recheckCopies()
	m.expireCopies()
	m.expireHolds()
	m.checkLeases()
	m.heartbeat()
	m.forgetFinished()
	m.repeatResults()
	m.maybeSteal()
	m.placeReady()
}
