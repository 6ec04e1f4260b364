package market

import (
	"fmt"
	"time"
)

// adopt makes this node the manager of a job whose manager is gone, from
// the copy of its record it holds (failover.go). Replicas awarded or
// running elsewhere keep their state and get a fresh lease, so their
// executors — once they find the new manager (rehome.go) — carry on;
// those that ran on the old manager are placed again (a gang whole);
// replicas that were pending are placed after Config.AdoptGrace. The
// record may be a little behind (copies go in batches): a replica it
// shows pending may have been awarded since, and its executor's report,
// with an epoch above the record's, is then taken as the replica's
// current state (catchUp) if it comes within the grace. This node's own
// tasks of the job report here at once. Adopting a job this node already
// manages does nothing.
func (fo *failover) adopt(rec JobRecord) {
	if _, ok := fo.jobs[rec.ID]; ok {
		return
	}
	j := rec.Clone()
	old := j.Manager
	j.Manager = fo.cfg.Self
	j.EpochTag = epochTag(fo.cfg.Self, j.ID, fo.now)
	fo.jobs[j.ID] = &j
	if fo.adoptedAt == nil {
		fo.adoptedAt = map[string]time.Time{}
	}
	fo.adoptedAt[j.ID] = fo.now
	fo.sp.takenFrom[j.ID] = old
	fo.jobOrder = append(fo.jobOrder, j.ID)
	fo.touch(j.ID)
	delete(fo.rehome, j.ID)
	fo.rehomeTo(j.ID, fo.cfg.Self)
	if j.State.Terminal() {
		return
	}
	fo.active = append(fo.active, j.ID)
	fo.dl.activate(j.ID)
	fo.dl.retimeJob(j.ID)
	why := "manager " + string(old) + " is gone"
	for i := range j.Tasks {
		t := &j.Tasks[i]
		switch t.State {
		case TaskAwarded, TaskRunning:
			if t.Node != old {
				t.LeaseUntil = fo.now.Add(fo.cfg.LeaseTimeout)
				fo.dl.retimeJob(t.Key.Job)
				continue
			}
			if j.isGang(t.Key.Task) {
				fo.gang.gangReplicaEnded(&j, t, TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: old, State: TaskPreempted, ExitCode: -1, Reason: why})
				continue
			}
			fo.move(&j, t, lost(fo.now, why))
		case TaskPending:
			t.NotBefore = fo.now.Add(fo.cfg.AdoptGrace)
			fo.dl.retimeJob(t.Key.Job)
			fo.auc.inherited[t.Key] = t.Epoch
		}
	}
	fo.event(j.ID, fmt.Sprintf("took over as manager from %s", old))
	fo.auc.placeReady()
}

// fromPreviousManager says whether an executor's report is of an award
// that the job's previous manager made after the record this node adopted
// was replicated:
//   - its epoch is above the record's, by at most maxEpochGap, it is of
//     a live replica (or a success), and the job was adopted no longer
//     than catchUpWindow ago: only another manager assigns a replica an
//     epoch above the one this node's record holds (a manager persists each
//     epoch before any message carries it), and the previous manager
//     could not have raised it by much between its last copy and its
//     end, nor its executors wait long to re-home; or
//   - the record showed the replica pending in a round of the previous
//     manager (Adopt noted its epoch in inherited), this node has opened
//     no round of its own since, and the report is of that epoch and of a
//     live replica (or a success).
//
// Gangs are left out: they are placed whole, and a gang member's late
// report is handled as stale.
func (fo *failover) fromPreviousManager(j *JobRecord, t *TaskRecord, s TaskStatus) bool {
	if t.State.Terminal() || j.State.Terminal() {
		return false
	}
	if t.State != TaskPending && t.State != TaskAwarded && t.State != TaskRunning {
		// Waiting on its dependencies in the adopted record: the previous
		// manager got further than this copy shows, and there is no award
		// to take over here (the campaign found the take-over panicking:
		// market/cluster TestFaultCampaign); the report is stale.
		return false
	}
	if j.isGang(t.Key.Task) {
		return false
	}
	// A success counts as a live replica's: a short task may have ended
	// before the job was taken over (a silent manager's job is adopted
	// three intervals and a lease after its last copy), and its executor's
	// repeated final report is the first word of it the adopter gets;
	// taken as stale, the replica would run again.
	live := s.State == TaskAwarded || s.State == TaskRunning || s.State == TaskSucceeded
	if s.Epoch > t.Epoch {
		at, adopted := fo.adoptedAt[j.ID]
		return adopted && live && epochSteps(t.Epoch, s.Epoch) <= maxEpochGap && fo.now.Sub(at) <= fo.catchUpWindow()
	}
	e, ok := fo.auc.inherited[t.Key]
	return ok && t.State == TaskPending && s.Epoch == e && e == t.Epoch && live
}

// catchUp takes over an award of the job's previous manager that the
// adopted record did not show (fromPreviousManager), reported by an
// executor that re-homed to this node. The replica becomes awarded to the
// reporting executor at the report's epoch, and the report is then
// applied as usual. Without it this node would place the replica again
// and cancel the executor's run as stale (or ignore its result).
func (fo *failover) catchUp(j *JobRecord, t *TaskRecord, s TaskStatus) {
	if (t.State == TaskAwarded || t.State == TaskRunning) && t.Node != s.Node {
		fo.send(t.Node, CancelTask{Key: t.Key, Epoch: t.Epoch, Reason: "superseded"})
	}
	fo.dropAuction(t.Key)
	delete(fo.auc.inherited, t.Key)
	fo.move(j, t, change{ev: evTakeOver, node: s.Node, epoch: s.Epoch})
	fo.event(j.ID, fmt.Sprintf("%s: %s reports epoch %d, awarded by the previous manager after the adopted record; taken over", t.Key, s.Node, s.Epoch))
}

// Bounds on taking over an award the adopted record did not show.
const (
	// maxEpochGap is how far above the adopted record's epoch a report
	// may be: the previous manager places a replica at most a few times
	// between two copies of its record.
	maxEpochGap = 4
)

// catchUpWindow is how long after an adoption executors' reports of the
// previous manager's late awards are taken: they re-home and renew their
// leases within a few seconds.
func (fo *failover) catchUpWindow() time.Duration {
	return fo.cfg.AdoptGrace + 2*fo.cfg.LeaseTimeout
}
