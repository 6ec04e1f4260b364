package market

import (
	"slices"
	"time"
)

// retiredJob is a finished job waiting out its retention.
type retiredJob struct {
	id string
	at time.Time // the job's Finished
}

// retire queues finished job j for forgetFinished. Jobs finish at the
// market's clock, which never goes back, so appending keeps the queue in
// order; Restore sorts what it queues.
func (m *Market) retire(j *JobRecord) {
	if m.cfg.JobRetention < 0 {
		return
	}
	m.retired = append(m.retired, retiredJob{id: j.ID, at: j.Finished})
}

// forgetFinished drops the records of jobs that finished more than
// JobRetention ago and tells the caller to delete them (ForgetJob). It
// visits only the jobs due: the queue is in finish order.
func (m *Market) forgetFinished() {
	if m.cfg.JobRetention < 0 || len(m.retired) == 0 {
		return
	}
	due := 0
	for due < len(m.retired) && !m.retired[due].at.Add(m.cfg.JobRetention).After(m.now) {
		due++
	}
	if due == 0 {
		return
	}
	for _, r := range m.retired[:due] {
		j, ok := m.jobs[r.id]
		if !ok || !j.State.Terminal() {
			continue // forgotten already (queued twice)
		}
		delete(m.jobs, r.id)
		delete(m.dirty, r.id)
		delete(m.firstRecord, r.id)
		delete(m.takenFrom, r.id)
		delete(m.outranked, r.id)
		m.forgetDisputes(r.id)
		m.stale++
		m.rep.forget(r.id)
		m.emit(ForgetJob{Job: r.id})
	}
	clear(m.retired[:due])
	m.retired = m.retired[due:]
	// jobOrder keeps submission order for Jobs; dropping a job from it is
	// a pass over every job, so it waits until half of it is stale.
	if m.stale > len(m.jobOrder)/2 {
		m.jobOrder = slices.DeleteFunc(m.jobOrder, func(id string) bool { return m.jobs[id] == nil })
		m.stale = 0
	}
}

// retireRestored queues the finished jobs among restored records, merged
// with what is queued already, in finish order.
func (m *Market) retireRestored(jobs []*JobRecord) {
	if m.cfg.JobRetention < 0 || len(jobs) == 0 {
		return
	}
	for _, j := range jobs {
		at := j.Finished
		if at.IsZero() { // a record without its finish time: keep it a full term from now
			at = m.now
		}
		m.retired = append(m.retired, retiredJob{id: j.ID, at: at})
	}
	slices.SortStableFunc(m.retired, func(a, b retiredJob) int { return a.at.Compare(b.at) })
}

// nextForget is when forgetFinished next forgets a finished job.
func (m *Market) nextForget() (time.Time, bool) {
	if len(m.retired) == 0 || m.cfg.JobRetention < 0 {
		return time.Time{}, false
	}
	return m.retired[0].at.Add(m.cfg.JobRetention), true
}
