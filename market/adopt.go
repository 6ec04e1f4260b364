package market

import (
	"fmt"
	"time"
)

// Adopt makes this node the manager of a job whose manager is gone, from
// the replica of its record. Replicas awarded or running elsewhere keep
// their state and get a fresh lease, so their executors — once they learn
// the new manager (Rehome) — carry on; replicas that were pending are
// placed as usual. Adopting a job this node already manages is a no-op.
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
				m.closeAttempt(&j, t, TaskFailed, -1, "manager "+string(old)+" is gone")
				m.requeue(&j, t, m.now)
				continue
			}
			t.LeaseUntil = m.now.Add(m.cfg.LeaseTimeout)
		case TaskPending:
			t.NotBefore = m.now
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
			r.to, r.next = manager, m.now
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
