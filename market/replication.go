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

// replication is the manager's state of its records' copies, behind its
// own boundary: what it needs of the rest of the market is copyEnv, and
// the market calls it with the time.
type replication struct {
	cfg *Config
	env copyEnv

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

// copyEnv is what replication needs of the market: the job table, the
// view and the event log.
type copyEnv interface {
	// record is the record of a job this node holds, or nil.
	record(job string) *JobRecord
	// activeJobs are the unfinished jobs, in submission order.
	activeJobs() []string
	// closestPeers are the r live peers closest to job, skip left out.
	closestPeers(job string, r int, skip NodeID) []NodeID
	// live says whether a node is this one or in the view.
	live(id NodeID) bool
	// event records a line of a job's history.
	event(job, text string)
}

// record is a job's record here, or nil (copyEnv).
func (sh *shared) record(job string) *JobRecord { return sh.jobs[job] }

// sentBatch is a Replicate effect awaiting Replicated.
type sentBatch struct {
	at      time.Time
	records map[string]ReplicaCopy
}

// on reports whether this node copies its job records.
func (r *replication) on() bool { return r.cfg.JobReplicas > 0 }

// note queues the saved record j of a job this node manages for copying.
func (r *replication) note(j JobRecord) {
	if !r.on() || j.Manager != r.cfg.Self {
		return
	}
	if r.pending == nil {
		r.pending = map[string]JobRecord{}
	}
	r.pending[j.ID] = j
}

// urgentCopies takes the new jobs' records out of the pending ones and
// returns their Replicate effect, or nil.
func (r *replication) urgentCopies(now time.Time) Effect {
	if len(r.urgent) == 0 {
		return nil
	}
	var recs []JobRecord
	for _, id := range r.urgent {
		if j, ok := r.pending[id]; ok {
			recs = append(recs, j)
			delete(r.pending, id)
		}
	}
	r.urgent = r.urgent[:0]
	return r.replicate(now, recs)
}

// due returns the periodic batch when it is due: the changed records, if
// the last batch was answered; nil otherwise.
func (r *replication) due(now time.Time) Effect {
	if len(r.pending) == 0 || r.open != 0 || now.Before(r.next) {
		return nil
	}
	recs := make([]JobRecord, 0, len(r.pending))
	for _, j := range r.pending {
		recs = append(recs, j)
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].ID < recs[b].ID })
	clear(r.pending)
	r.next = now.Add(r.cfg.ReplicateEvery)
	e := r.replicate(now, recs)
	if e != nil {
		r.open = r.batch
	}
	return e
}

// withoutProofs is j without its executors' proofs, for a copy: they name
// this node as manager and prove nothing for the holder that may take the
// job over (proofs.go); a 1,000-replica record is 64 KB lighter.
func withoutProofs(j JobRecord) JobRecord {
	j.Tasks = slices.Clone(j.Tasks)
	for i := range j.Tasks {
		j.Tasks[i].Proof = nil
	}
	return j
}

// replicate builds the Replicate effect of recs with their replica peers,
// or nil when no record has a peer to go to.
func (r *replication) replicate(now time.Time, recs []JobRecord) Effect {
	b := &sentBatch{at: now, records: make(map[string]ReplicaCopy, len(recs))}
	out := Replicate{Records: make([]ReplicaCopy, 0, len(recs))}
	for _, j := range recs {
		peers := r.env.closestPeers(j.ID, r.cfg.JobReplicas, "")
		drop := r.setMoved(j.ID, peers)
		if len(peers)+len(drop) == 0 {
			continue
		}
		c := ReplicaCopy{Record: withoutProofs(j), Peers: peers, Drop: drop}
		out.Records = append(out.Records, c)
		b.records[j.ID] = c
		if r.sentAt == nil {
			r.sentAt = map[string]time.Time{}
		}
		r.sentAt[j.ID] = now
	}
	if len(out.Records) == 0 {
		return nil
	}
	r.batch++
	out.Batch = r.batch
	if r.sent == nil {
		r.sent = map[uint64]*sentBatch{}
	}
	r.sent[out.Batch] = b
	return out
}

// setMoved records peers as job's replica set and returns the members of
// its earlier sets not in it that are still to drop their copies.
func (r *replication) setMoved(job string, peers []NodeID) []NodeID {
	if r.sets == nil {
		r.sets, r.drop = map[string][]NodeID{}, map[string][]NodeID{}
	}
	if old := r.sets[job]; !slices.Equal(old, peers) {
		drop := r.drop[job]
		for _, p := range old {
			if !slices.Contains(peers, p) && !slices.Contains(drop, p) {
				drop = append(drop, p)
			}
		}
		drop = slices.DeleteFunc(drop, func(p NodeID) bool { return slices.Contains(peers, p) })
		r.sets[job], r.drop[job] = peers, drop
	}
	// Only the live ones can be told; one that is gone is told when it
	// is back (dropsFor).
	var live []NodeID
	for _, p := range r.drop[job] {
		if r.env.live(p) {
			live = append(live, p)
		}
	}
	return live
}

// dropsFor queues again the records of the jobs whose copy peer p still
// holds and must drop: p came back into the view.
func (r *replication) dropsFor(p NodeID) {
	for job, drop := range r.drop {
		if j := r.env.record(job); j != nil && slices.Contains(drop, p) {
			if _, queued := r.pending[job]; !queued {
				r.note(j.Clone())
			}
		}
	}
}

// forget forgets what replication keeps of a job this node no longer
// manages.
func (r *replication) forget(job string) {
	delete(r.sets, job)
	delete(r.drop, job)
	delete(r.pending, job)
	delete(r.tries, job)
	delete(r.sentAt, job)
}

// refresh queues again, every CopyRefresh, the records of the unfinished
// jobs whose copies went out longer ago than that.
func (r *replication) refresh(now time.Time) {
	if !r.on() || r.cfg.CopyRefresh < 0 || now.Before(r.refreshAt) {
		return
	}
	r.refreshAt = now.Add(r.cfg.CopyRefresh)
	for _, id := range r.env.activeJobs() {
		j := r.env.record(id)
		if _, queued := r.pending[id]; !queued && !now.Before(r.sentAt[id].Add(r.cfg.CopyRefresh)) && j.Manager == r.cfg.Self {
			r.note(j.Clone())
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
	m.rep.replicated(batch, stored)
}

func (r *replication) replicated(batch uint64, stored map[string]int) {
	b := r.sent[batch]
	if b == nil {
		return // answered late, after it was given up (expire)
	}
	delete(r.sent, batch)
	if batch == r.open {
		r.open = 0
	}
	ids := make([]string, 0, len(b.records))
	for id := range b.records {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := b.records[id]
		if stored[id] >= len(c.Peers)+len(c.Drop) {
			delete(r.tries, id)
			if d := slices.DeleteFunc(r.drop[id], func(p NodeID) bool { return slices.Contains(c.Drop, p) }); len(d) > 0 {
				r.drop[id] = d
			} else {
				delete(r.drop, id)
			}
			continue
		}
		if r.tries == nil {
			r.tries = map[string]int{}
		}
		r.tries[id]++
		if r.tries[id] > r.cfg.ReplicateTries {
			r.env.event(id, fmt.Sprintf("job record stored by %d of %d peers (replica set %v, told to drop their copies %v) after %d tries; giving up until it changes", stored[id], len(c.Peers)+len(c.Drop), c.Peers, c.Drop, r.cfg.ReplicateTries))
			delete(r.tries, id)
			continue
		}
		if _, newer := r.pending[id]; !newer && r.env.record(id) != nil {
			r.note(c.Record)
		}
	}
}

// expire gives up on batches not answered within twice the query
// timeout, as if no peer had stored them, so that a lost answer does not
// stop the copies.
func (r *replication) expire(now time.Time) {
	var late []uint64
	for batch, b := range r.sent {
		if now.Sub(b.at) >= 2*r.cfg.QueryTimeout {
			late = append(late, batch)
		}
	}
	slices.Sort(late)
	for _, batch := range late {
		r.replicated(batch, nil)
	}
}

// nextAt is when replication next has work: the next periodic batch (the
// zero time: at once), or giving up on an unanswered one; ok is false
// when it has none. changed: records were saved since the last Ready
// (they will be pending after the next); active: some job is unfinished.
func (r *replication) nextAt(changed, active bool) (at time.Time, ok bool) {
	if (len(r.pending) > 0 || (r.on() && changed)) && r.open == 0 {
		at, ok = r.next, true
	}
	if r.on() && r.cfg.CopyRefresh >= 0 && active && (!ok || r.refreshAt.Before(at)) {
		at, ok = r.refreshAt, true
	}
	for _, b := range r.sent {
		if t := b.at.Add(2 * r.cfg.QueryTimeout); !ok || t.Before(at) {
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
