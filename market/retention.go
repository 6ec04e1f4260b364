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
func (mg *manager) retire(j *JobRecord) {
	if mg.cfg.JobRetention < 0 {
		return
	}
	mg.retired = append(mg.retired, retiredJob{id: j.ID, at: j.Finished})
}

// forgetFinished drops the records of jobs that finished more than
// JobRetention ago and tells the caller to delete them (ForgetJob). It
// visits only the jobs due: the queue is in finish order.
func (mg *manager) forgetFinished() {
	if mg.cfg.JobRetention < 0 || len(mg.retired) == 0 {
		return
	}
	due := 0
	for due < len(mg.retired) && !mg.retired[due].at.Add(mg.cfg.JobRetention).After(mg.now) {
		due++
	}
	if due == 0 {
		return
	}
	for _, r := range mg.retired[:due] {
		j, ok := mg.jobs[r.id]
		if !ok || !j.State.Terminal() {
			continue // forgotten already (queued twice)
		}
		delete(mg.jobs, r.id)
		delete(mg.dirty, r.id)
		delete(mg.firstRecord, r.id)
		delete(mg.sp.takenFrom, r.id)
		delete(mg.sp.outranked, r.id)
		mg.sp.forgetDisputes(r.id)
		mg.stale++
		mg.rep.forget(r.id)
		mg.emit(ForgetJob{Job: r.id})
	}
	clear(mg.retired[:due])
	mg.retired = mg.retired[due:]
	// jobOrder keeps submission order for Jobs; dropping a job from it is
	// a pass over every job, so it waits until half of it is stale.
	if mg.stale > len(mg.jobOrder)/2 {
		mg.jobOrder = slices.DeleteFunc(mg.jobOrder, func(id string) bool { return mg.jobs[id] == nil })
		mg.stale = 0
	}
}

// retireRestored queues the finished jobs among restored records, merged
// with what is queued already, in finish order.
func (mg *manager) retireRestored(jobs []*JobRecord) {
	if mg.cfg.JobRetention < 0 || len(jobs) == 0 {
		return
	}
	for _, j := range jobs {
		at := j.Finished
		if at.IsZero() { // a record without its finish time: keep it a full term from now
			at = mg.now
		}
		mg.retired = append(mg.retired, retiredJob{id: j.ID, at: at})
	}
	slices.SortStableFunc(mg.retired, func(a, b retiredJob) int { return a.at.Compare(b.at) })
}

// nextForget is when forgetFinished next forgets a finished job.
func (mg *manager) nextForget() (time.Time, bool) {
	if len(mg.retired) == 0 || mg.cfg.JobRetention < 0 {
		return time.Time{}, false
	}
	return mg.retired[0].at.Add(mg.cfg.JobRetention), true
}
