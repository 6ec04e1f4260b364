package market

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Copies of the records of the jobs this node manages. Every record the
// market saves is copied to the Config.JobReplicas live peers closest to
// the job ID (Closest), with that replica set, so that a job survives its
// manager: the closest live member of the set takes it over (failover.go).
// Changed records go out in batches, one Replicate effect every
// ReplicateEvery while the previous batch is answered; a new job's record
// goes out at once, in the Ready that saves it, so that the job survives
// this node from the moment its submitter hears it was accepted. A
// record that fewer peers stored than were asked goes again with the
// next batches, up to ReplicateTries in a row, unless a newer version
// goes instead: a final record that reached no replica would leave it
// holding an unfinished job to take over.

// replication is the manager's state of its records' copies.
type replication struct {
	pending map[string]JobRecord // latest saved record of each job, not sent yet
	urgent  []string             // jobs to copy in this Ready (new submissions)
	batch   uint64               // the last batch's number
	open    uint64               // the periodic batch awaiting Replicated; 0: none
	next    time.Time            // when the next periodic batch may go
	sent    map[uint64]*sentBatch
	tries   map[string]int // batches in a row that fell short, per job
	// sets is each job's replica set as last copied, and drop the
	// members of earlier ones still to be told to drop their copies.
	sets map[string][]NodeID
	drop map[string][]NodeID
	// refreshAt is when the copies of unfinished jobs go again.
	refreshAt time.Time
	sentAt    map[string]time.Time // when each job's record last went
}

// sentBatch is a Replicate effect awaiting Replicated.
type sentBatch struct {
	at      time.Time
	records map[string]ReplicaCopy
}

// replicating reports whether this node copies its job records.
func (m *Market) replicating() bool { return m.cfg.JobReplicas > 0 }

// noteSaved queues the saved record j of a job this node manages for
// copying, and copies it at once when the job was just submitted.
func (m *Market) noteSaved(j JobRecord) {
	if !m.replicating() || j.Manager != m.cfg.Self {
		return
	}
	if m.rep.pending == nil {
		m.rep.pending = map[string]JobRecord{}
	}
	m.rep.pending[j.ID] = j
}

// urgentCopies takes the new jobs' records out of the pending ones and
// returns their Replicate effect, or nil.
func (m *Market) urgentCopies() Effect {
	if len(m.rep.urgent) == 0 {
		return nil
	}
	var recs []JobRecord
	for _, id := range m.rep.urgent {
		if j, ok := m.rep.pending[id]; ok {
			recs = append(recs, j)
			delete(m.rep.pending, id)
		}
	}
	m.rep.urgent = m.rep.urgent[:0]
	return m.replicate(recs)
}

// replicateDue sends the periodic batch when it is due: the changed
// records, if the last batch was answered.
func (m *Market) replicateDue() {
	if len(m.rep.pending) == 0 || m.rep.open != 0 || m.now.Before(m.rep.next) {
		return
	}
	recs := make([]JobRecord, 0, len(m.rep.pending))
	for _, j := range m.rep.pending {
		recs = append(recs, j)
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].ID < recs[b].ID })
	clear(m.rep.pending)
	m.rep.next = m.now.Add(m.cfg.ReplicateEvery)
	if e := m.replicate(recs); e != nil {
		m.rep.open = m.rep.batch
		m.emit(e)
	}
}

// replicate builds the Replicate effect of recs with their replica peers,
// or nil when no record has a peer to go to.
func (m *Market) replicate(recs []JobRecord) Effect {
	b := &sentBatch{at: m.now, records: make(map[string]ReplicaCopy, len(recs))}
	out := Replicate{Records: make([]ReplicaCopy, 0, len(recs))}
	for _, j := range recs {
		peers := m.closestPeers(j.ID, m.cfg.JobReplicas, "")
		drop := m.replicaSetMoved(j.ID, peers)
		if len(peers)+len(drop) == 0 {
			continue
		}
		c := ReplicaCopy{Record: j, Peers: peers, Drop: drop}
		out.Records = append(out.Records, c)
		b.records[j.ID] = c
		if m.rep.sentAt == nil {
			m.rep.sentAt = map[string]time.Time{}
		}
		m.rep.sentAt[j.ID] = m.now
	}
	if len(out.Records) == 0 {
		return nil
	}
	m.rep.batch++
	out.Batch = m.rep.batch
	if m.rep.sent == nil {
		m.rep.sent = map[uint64]*sentBatch{}
	}
	m.rep.sent[out.Batch] = b
	return out
}

// replicaSetMoved records peers as job's replica set and returns the
// members of its earlier sets not in it that are still to drop their
// copies.
func (m *Market) replicaSetMoved(job string, peers []NodeID) []NodeID {
	if m.rep.sets == nil {
		m.rep.sets, m.rep.drop = map[string][]NodeID{}, map[string][]NodeID{}
	}
	if old := m.rep.sets[job]; !slices.Equal(old, peers) {
		drop := m.rep.drop[job]
		for _, p := range old {
			if !slices.Contains(peers, p) && !slices.Contains(drop, p) {
				drop = append(drop, p)
			}
		}
		drop = slices.DeleteFunc(drop, func(p NodeID) bool { return slices.Contains(peers, p) })
		m.rep.sets[job], m.rep.drop[job] = peers, drop
	}
	// Only the live ones can be told; one that is gone is told when it
	// is back (dropsFor).
	var live []NodeID
	for _, p := range m.rep.drop[job] {
		if m.Live(p) {
			live = append(live, p)
		}
	}
	return live
}

// dropsFor queues again the records of the jobs whose copy peer p still
// holds and must drop: p came back into the view.
func (m *Market) dropsFor(p NodeID) {
	for job, drop := range m.rep.drop {
		if j := m.jobs[job]; j != nil && slices.Contains(drop, p) {
			if _, queued := m.rep.pending[job]; !queued {
				m.noteSaved(j.Clone())
			}
		}
	}
}

// forgetCopies forgets what replication keeps of a job this node no
// longer manages.
func (m *Market) forgetCopies(job string) {
	delete(m.rep.sets, job)
	delete(m.rep.drop, job)
	delete(m.rep.pending, job)
	delete(m.rep.tries, job)
	delete(m.rep.sentAt, job)
}

// refreshCopies queues again, every CopyRefresh, the records of the
// unfinished jobs whose copies went out longer ago than that.
func (m *Market) refreshCopies() {
	if !m.replicating() || m.cfg.CopyRefresh < 0 || m.now.Before(m.rep.refreshAt) {
		return
	}
	m.rep.refreshAt = m.now.Add(m.cfg.CopyRefresh)
	for _, id := range m.activeJobs() {
		j := m.jobs[id]
		if _, queued := m.rep.pending[id]; !queued && !m.now.Before(m.rep.sentAt[id].Add(m.cfg.CopyRefresh)) && j.Manager == m.cfg.Self {
			m.noteSaved(j.Clone())
		}
	}
}

// Replicated reports how a Replicate batch went: stored holds, per job,
// how many of its peers stored the record, or dropped their copy (a job
// left out: none). Records short of their peers are sent again with a
// later batch.
func (m *Market) Replicated(now time.Time, batch uint64, stored map[string]int) {
	m.enter(now)
	defer m.leave()
	b := m.rep.sent[batch]
	if b == nil {
		return // answered late, after it was given up (expireBatches)
	}
	delete(m.rep.sent, batch)
	if batch == m.rep.open {
		m.rep.open = 0
	}
	ids := make([]string, 0, len(b.records))
	for id := range b.records {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := b.records[id]
		if stored[id] >= len(c.Peers)+len(c.Drop) {
			delete(m.rep.tries, id)
			if d := slices.DeleteFunc(m.rep.drop[id], func(p NodeID) bool { return slices.Contains(c.Drop, p) }); len(d) > 0 {
				m.rep.drop[id] = d
			} else {
				delete(m.rep.drop, id)
			}
			continue
		}
		if m.rep.tries == nil {
			m.rep.tries = map[string]int{}
		}
		m.rep.tries[id]++
		if m.rep.tries[id] > m.cfg.ReplicateTries {
			m.event(id, fmt.Sprintf("job record stored by %d of %d peers (replica set %v, told to drop their copies %v) after %d tries; giving up until it changes", stored[id], len(c.Peers)+len(c.Drop), c.Peers, c.Drop, m.cfg.ReplicateTries))
			delete(m.rep.tries, id)
			continue
		}
		if _, newer := m.rep.pending[id]; !newer && m.jobs[id] != nil {
			m.noteSaved(c.Record)
		}
	}
}

// expireBatches gives up on batches not answered within twice the query
// timeout, as if no peer had stored them, so that a lost answer does not
// stop the copies.
func (m *Market) expireBatches() {
	var late []uint64
	for batch, b := range m.rep.sent {
		if m.now.Sub(b.at) >= 2*m.cfg.QueryTimeout {
			late = append(late, batch)
		}
	}
	slices.Sort(late)
	for _, batch := range late {
		m.Replicated(m.now, batch, nil)
	}
}

// nextCopies is when replication next has work: the next periodic batch
// (the zero time: at once), or giving up on an unanswered one; ok is
// false when it has none.
func (m *Market) nextCopies() (at time.Time, ok bool) {
	// Records touched since the last Ready will be pending after the next.
	if (len(m.rep.pending) > 0 || (m.replicating() && len(m.dirty) > 0)) && m.rep.open == 0 {
		at, ok = m.rep.next, true
	}
	if m.replicating() && m.cfg.CopyRefresh >= 0 && len(m.active) > 0 && (!ok || m.rep.refreshAt.Before(at)) {
		at, ok = m.rep.refreshAt, true
	}
	for _, b := range m.rep.sent {
		if t := b.at.Add(2 * m.cfg.QueryTimeout); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// Copying reports whether a Replicate batch holding job's record awaits
// its Replicated: a caller about to tell a submitter that the job was
// accepted can wait for it.
func (m *Market) Copying(job string) bool {
	for _, b := range m.rep.sent {
		if _, ok := b.records[job]; ok {
			return true
		}
	}
	return false
}
