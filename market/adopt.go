package market

import (
	"fmt"
	"time"
)

// Adopt makes this node the manager of a job whose manager is gone, from
// the replica of its record. Replicas awarded or running elsewhere keep
// their state and get a fresh lease, so their executors — once they learn
// the new manager (Rehome) — carry on; replicas that were pending are
// placed after Config.AdoptGrace. The record may be a little behind (its
// replicas are pushed in batches): a replica it shows pending may have
// been awarded since, and its executor's report, with an epoch above the
// record's, is then taken as the replica's current state (catchUp) if it
// comes within the grace. Adopting a job this node already manages is a
// no-op.
func (m *Market) Adopt(now time.Time, rec JobRecord) {
	m.enter(now)
	defer m.leave()
	if _, ok := m.jobs[rec.ID]; ok {
		return
	}
	j := rec.Clone()
	old := j.Manager
	j.Manager = m.cfg.Self
	m.jobs[j.ID] = &j
	m.jobOrder = append(m.jobOrder, j.ID)
	m.touch(j.ID)
	if j.State.Terminal() {
		return
	}
	m.active = append(m.active, j.ID)
	for i := range j.Tasks {
		t := &j.Tasks[i]
		switch t.State {
		case TaskAwarded, TaskRunning:
			if t.Node == old {
				m.move(&j, t, lost(m.now, "manager "+string(old)+" is gone"))
				continue
			}
			t.LeaseUntil = m.now.Add(m.cfg.LeaseTimeout)
		case TaskPending:
			t.NotBefore = m.now.Add(m.cfg.AdoptGrace)
			m.inherited[t.Key] = t.Epoch
		}
	}
	m.event(j.ID, fmt.Sprintf("took over as manager from %s", old))
	m.placeReady()
}

// Rehome tells this node's contractor that the tasks of a job now report
// to a new manager (after a failover). Their leases are renewed at once.
func (m *Market) Rehome(now time.Time, job string, manager NodeID) {
	m.enter(now)
	defer m.leave()
	c := &m.c
	moved := 0
	re := func(k *contract) {
		if k.spec.Key.Job == job && k.manager != manager {
			k.manager, k.beat = manager, time.Time{}
			moved++
		}
	}
	for _, k := range c.running {
		re(k)
	}
	for _, k := range c.queue {
		re(k)
	}
	for _, h := range c.holds {
		re(h.k)
	}
	for _, r := range c.results {
		if r.st.Key.Job == job {
			r.to, r.next, r.acked = manager, m.now, false // the new manager has not seen it
			c.resultsDue = m.now
			moved++
		}
	}
	if moved > 0 {
		m.lastBeat = time.Time{}
		m.heartbeat()
		m.repeatResults()
		m.event(job, fmt.Sprintf("now reporting %d task(s) to manager %s", moved, manager))
	}
}

// ManagersOf lists the distinct managers of the tasks this node holds
// (queued, running, held, or with a final report still being repeated),
// by job.
func (m *Market) ManagersOf() map[string]NodeID {
	c := &m.c
	out := map[string]NodeID{}
	for _, k := range c.running {
		out[k.spec.Key.Job] = k.manager
	}
	for _, k := range c.queue {
		out[k.spec.Key.Job] = k.manager
	}
	for _, h := range c.holds {
		out[h.k.spec.Key.Job] = h.k.manager
	}
	for _, r := range c.results {
		out[r.st.Key.Job] = r.to
	}
	return out
}

// fromPreviousManager says whether an executor's report is of an award
// that the job's previous manager made after the record this node adopted
// was replicated:
//   - its epoch is above the record's: only another manager assigns a
//     replica an epoch above the one this node's record holds (a manager
//     persists each epoch before any message carries it); or
//   - the record showed the replica pending in a round of the previous
//     manager (Adopt noted its epoch in inherited), this node has opened
//     no round of its own since, and the report is of that epoch and of a
//     live replica.
//
// Gangs are left out: they are placed whole, and a gang member's late
// report is handled as stale.
func (m *Market) fromPreviousManager(j *JobRecord, t *TaskRecord, s TaskStatus) bool {
	if t.State.Terminal() || j.State.Terminal() {
		return false
	}
	if j.isGang(t.Key.Task) {
		return false
	}
	if s.Epoch > t.Epoch {
		return true
	}
	e, ok := m.inherited[t.Key]
	live := s.State == TaskAwarded || s.State == TaskRunning
	return ok && t.State == TaskPending && s.Epoch == e && e == t.Epoch && live
}

// catchUp takes over an award of the job's previous manager that the
// adopted record did not show (fromPreviousManager), reported by an
// executor that re-homed to this node. The replica becomes awarded to the
// reporting executor at the report's epoch, and the report is then
// applied as usual. Without it this node would place the replica again
// and cancel the executor's run as stale (or ignore its result).
func (m *Market) catchUp(j *JobRecord, t *TaskRecord, s TaskStatus) {
	if (t.State == TaskAwarded || t.State == TaskRunning) && t.Node != s.Node {
		m.send(t.Node, CancelTask{Key: t.Key, Epoch: t.Epoch, Reason: "superseded"})
	}
	delete(m.auctions, t.Key)
	delete(m.inherited, t.Key)
	m.move(j, t, change{ev: evTakeOver, node: s.Node, epoch: s.Epoch})
	m.event(j.ID, fmt.Sprintf("%s: %s reports epoch %d, awarded by the previous manager after the adopted record; taken over", t.Key, s.Node, s.Epoch))
}
