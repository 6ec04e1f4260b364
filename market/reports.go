package market

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// onTaskStatus applies an executor's report, rejecting stale epochs.
func (mg *manager) onTaskStatus(s TaskStatus) {
	j, t := mg.find(s.Key)
	if t == nil {
		return // not this node's job (any more): no ack, the report may find its manager yet
	}
	if a := mg.auctions[s.Key]; t.State == TaskPending && a != nil && a.awardee != nil && a.awardee.Bidder == s.Node &&
		a.id.Epoch == s.Epoch {
		// The awardee's report came before its answer to the award (lost,
		// or overtaken): it accepted, and runs the replica — or ran it
		// already, a short task whose answer and running reports were all
		// lost (the fault campaign's seed 1448). Judged stale, its run
		// would be stopped, or its end ignored, and the replica placed
		// again: started twice.
		mg.auc.onAwardReply(AwardReply{Auction: a.id, Bidder: s.Node, Accept: true, Start: s.Time})
		j, t = mg.find(s.Key)
		if t == nil {
			return
		}
	}
	if s.AckWanted {
		// Whatever becomes of the report — applied, a repeat, stale — a
		// repeat would be judged the same way. The ack leaves after this
		// turn's records are committed, as every message does.
		defer mg.send(s.Node, ResultAck{Key: s.Key, Epoch: s.Epoch, Attempt: s.Attempt})
	}
	if s.Epoch == t.Epoch && s.Node == lastNode(t) && s.State == t.State && t.State.Terminal() {
		return // a repeated final report: already applied
	}
	if s.Epoch == t.Epoch && j.State.Terminal() && s.State.Terminal() {
		return // the job ended; this replica's end changes nothing
	}
	if mg.fo.fromPreviousManager(j, t, s) {
		mg.fo.catchUp(j, t, s)
	}
	if mg.lateSuccess(j, t, s) || mg.sp.loserSuccess(j, t, s) {
		mg.acceptLateSuccess(j, t, s)
		return
	}
	if s.Epoch != t.Epoch || s.Node != t.Node || t.State.Terminal() || j.State.Terminal() {
		live := s.State == TaskRunning || s.State == TaskAwarded
		if live && (s.Epoch < t.Epoch || j.State.Terminal() || t.State.Terminal() || s.Node != t.Node) {
			mg.send(s.Node, CancelTask{Key: s.Key, Epoch: s.Epoch, Reason: "stale epoch"})
		}
		mg.noteOtherSidesRun(j, t, s)
		now := "on " + string(t.Node)
		if t.Node == "" {
			now = string(t.State)
		}
		mg.tix.refuse(RefuseReport, s.Node, j.ID, fmt.Sprintf("%s: stale report %q from %s epoch %d rejected (the replica is %s, epoch %d)", s.Key, s.State, s.Node, s.Epoch, now, t.Epoch))
		return
	}
	// Lease renewals: a report of the state the manager already has.
	if (s.State == TaskRunning && t.State == TaskRunning) || (s.State == TaskAwarded && (t.State == TaskAwarded || t.State == TaskRunning)) {
		if len(s.Proof) > 0 {
			// Kept, not saved: an adopter's first proof for a replica its
			// copy already showed running comes with a renewal.
			t.Proof = s.Proof
		}
		t.LeaseUntil = mg.now.Add(mg.cfg.LeaseTimeout)
		mg.dl.retimeJob(t.Key.Job)
		return
	}
	t.LeaseUntil = mg.now.Add(mg.cfg.LeaseTimeout)
	mg.dl.retimeJob(t.Key.Job)
	mg.touch(j.ID)
	switch s.State {
	case TaskRunning:
		mg.move(j, t, change{ev: evStart, at: s.Time})
		t.Proof = s.Proof
		mg.event(j.ID, fmt.Sprintf("%s: running on %s", t.Key, s.Node))
	case TaskSucceeded:
		if s.Runtime > 0 {
			mg.learned.Observe(j.Spec.Type, s.Runtime)
		}
		if over := mg.auc.overDataLimit(j, s.Outputs); over != "" {
			mg.move(j, t, change{ev: evFail, exit: s.ExitCode, reason: over})
			reason := fmt.Sprintf("task %s: %s", t.Key.Task, over)
			mg.event(j.ID, reason)
			mg.endJob(j, JobFailed, reason)
			return
		}
		mg.move(j, t, change{ev: evSucceed, exit: s.ExitCode, reason: s.Reason})
		t.Outputs, t.Proof = s.Outputs, s.Proof
		mg.event(j.ID, fmt.Sprintf("%s: succeeded on %s", t.Key, s.Node))
		mg.release(j)
	case TaskFailed, TaskPreempted, TaskCancelled:
		if j.isGang(t.Key.Task) {
			mg.gang.gangReplicaEnded(j, t, s)
			break
		}
		if s.State != TaskFailed {
			mg.move(j, t, change{ev: evRequeue, at: mg.now, ended: attemptEnd{s.State, s.ExitCode, s.Reason}})
			mg.event(j.ID, fmt.Sprintf("%s: %s on %s (%s); placing again", t.Key, s.State, s.Node, s.Reason))
			break
		}
		t.Failures++
		ts, _ := j.Spec.Task(t.Key.Task)
		if t.Failures > ts.Retries {
			mg.move(j, t, change{ev: evFail, exit: s.ExitCode, reason: s.Reason})
			reason := fmt.Sprintf("task %s failed after %d attempts: exit code %d: %s", t.Key.Task, t.Attempts, s.ExitCode, s.Reason)
			if t.Key.Replica > 0 || ts.Replicas > 1 {
				reason = fmt.Sprintf("task %s replica %d failed after %d attempts: exit code %d: %s", t.Key.Task, t.Key.Replica, t.Attempts, s.ExitCode, s.Reason)
			}
			mg.event(j.ID, reason)
			mg.endJob(j, JobFailed, reason)
			return
		}
		back := min(mg.cfg.RetryBase<<min(t.Failures-1, 20), mg.cfg.RetryMax)
		mg.move(j, t, change{ev: evRetry, at: mg.now.Add(back), exit: s.ExitCode, reason: s.Reason})
		mg.event(j.ID, fmt.Sprintf("%s: failed on %s (exit %d: %s); retry %d/%d in %v", t.Key, s.Node, s.ExitCode, s.Reason, t.Failures, ts.Retries, back))
	}
	mg.auc.placeReady()
}

// lateSuccess says whether s reports the success of an earlier attempt
// of replica t that this record closed without one — its executor was
// taken for lost (gone, its lease lapsed: cut off, or crashed right after
// the end) and the replica placed again. The run happened, and its
// outputs exist: taking it spares a second run, which would otherwise
// start or go on (the fault campaign's crash seed 7405). Not for gangs:
// a gang runs whole.
func (mg *manager) lateSuccess(j *JobRecord, t *TaskRecord, s TaskStatus) bool {
	if s.State != TaskSucceeded || j.State.Terminal() || j.isGang(t.Key.Task) {
		return false
	}
	if t.State != TaskPending && t.State != TaskAwarded && t.State != TaskRunning {
		return false
	}
	if s.Epoch == t.Epoch && s.Node == t.Node {
		return false // the current attempt: applied as usual
	}
	for i := range t.History {
		if h := &t.History[i]; h.Epoch == s.Epoch && h.Node == s.Node {
			return h.State != TaskSucceeded && !h.Finished.IsZero()
		}
	}
	return false
}

// acceptLateSuccess applies an earlier attempt's success (lateSuccess):
// the current attempt, if any, is cancelled, and the replica succeeds at
// the reported epoch.
func (mg *manager) acceptLateSuccess(j *JobRecord, t *TaskRecord, s TaskStatus) {
	if over := mg.auc.overDataLimit(j, s.Outputs); over != "" {
		mg.tix.refuse(RefuseReport, s.Node, j.ID, fmt.Sprintf("%s: late success from %s epoch %d not taken: %s", s.Key, s.Node, s.Epoch, over))
		return
	}
	if a := mg.auctions[t.Key]; a != nil && a.awardee != nil {
		mg.send(a.awardee.Bidder, CancelTask{Key: t.Key, Epoch: a.id.Epoch, Reason: "award withdrawn: an earlier attempt succeeded"})
	}
	mg.dropAuction(t.Key)
	if t.State == TaskAwarded || t.State == TaskRunning {
		mg.send(t.Node, CancelTask{Key: t.Key, Epoch: t.Epoch, Reason: "superseded: an earlier attempt succeeded"})
	}
	if s.Runtime > 0 {
		mg.learned.Observe(j.Spec.Type, s.Runtime)
	}
	mg.touch(j.ID)
	mg.move(j, t, change{ev: evLateSucceed, node: s.Node, epoch: s.Epoch, exit: s.ExitCode, reason: s.Reason})
	t.Outputs, t.Proof = s.Outputs, s.Proof
	mg.event(j.ID, fmt.Sprintf("%s: succeeded on %s (epoch %d, reported late; the attempt placed since is cancelled)", t.Key, s.Node, s.Epoch))
	mg.release(j)
	mg.auc.placeReady()
}

// lastNode is the node of the replica's latest attempt.
func lastNode(t *TaskRecord) NodeID {
	if h := lastAttempt(t); h != nil {
		return h.Node
	}
	return t.Node
}

func lastAttempt(t *TaskRecord) *AttemptRecord {
	if len(t.History) == 0 {
		return nil
	}
	return &t.History[len(t.History)-1]
}

// release marks replicas whose dependencies all succeeded as pending, and
// finishes the job when every replica succeeded.
func (mg *manager) release(j *JobRecord) {
	// One pass without allocating first: it runs at every task's end, and
	// a job with nothing waiting (no DAG, or every dependency released)
	// needs no more, however many replicas it has.
	all, waiting := true, false
	for i := range j.Tasks {
		switch j.Tasks[i].State {
		case TaskSucceeded:
		case TaskWaiting:
			all, waiting = false, true
		default:
			all = false
		}
	}
	if all {
		mg.endJob(j, JobSucceeded, "")
		return
	}
	if !waiting {
		return
	}
	done := map[string]bool{}
	for _, ts := range j.Spec.Tasks {
		done[ts.Name] = true
	}
	for _, t := range j.Tasks {
		if t.State != TaskSucceeded {
			done[t.Key.Task] = false
		}
	}
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.State != TaskWaiting {
			continue
		}
		ts, _ := j.Spec.Task(t.Key.Task)
		ok := true
		for _, dep := range ts.After {
			ok = ok && done[dep]
		}
		if ok {
			mg.move(j, t, change{ev: evReady})
		}
	}
}

// endJob moves a job to a terminal state, stopping whatever still runs.
func (mg *manager) endJob(j *JobRecord, st JobState, reason string) {
	mg.endJobWith(j, st, reason, func(t *TaskRecord) {
		mg.send(t.Node, CancelTask{Key: t.Key, Epoch: t.Epoch, Reason: fmt.Sprintf("job %s", st)})
	})
}

// endJobWith ends j as endJob does, but calls live for each replica
// awarded or running instead of cancelling it.
func (mg *manager) endJobWith(j *JobRecord, st JobState, reason string, live func(t *TaskRecord)) {
	mg.endJobState(j, st, reason)
	for _, ts := range j.Spec.Tasks {
		if g := mg.gangs[gangID(j.ID, ts.Name)]; g != nil {
			if g.holding {
				for r, n := range g.holders {
					mg.send(n, Release{Key: TaskKey{Job: g.job, Task: g.task, Replica: r}, Epoch: g.epoch})
				}
			}
			mg.dropGang(j.ID, ts.Name)
		}
	}
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.State.Terminal() {
			continue
		}
		if t.State == TaskAwarded || t.State == TaskRunning {
			live(t)
		}
		if a := mg.auctions[t.Key]; a != nil && a.awardee != nil {
			// An award whose answer is still out: the record shows no
			// executor to tell, and the awardee would run the replica for
			// a job no longer managed here (a manager yielding just after
			// its round closed: the soak's seed 3884, run twice).
			mg.send(a.awardee.Bidder, CancelTask{Key: t.Key, Epoch: a.id.Epoch, Reason: "award withdrawn: job " + string(st)})
		}
		mg.dropAuction(t.Key)
		delete(mg.auc.inherited, t.Key)
		mg.move(j, t, change{ev: evCancel, reason: "job " + string(st)})
	}
	mg.touch(j.ID)
	mg.event(j.ID, fmt.Sprintf("job %s%s", st, suffix(reason)))
}

// timeoutText names the pending timeout that ran out and where it came
// from.
func timeoutText(j *JobRecord, timeout time.Duration) string {
	if j.Spec.PendingTimeout > 0 {
		return fmt.Sprintf("its pending_timeout (%v)", timeout)
	}
	return fmt.Sprintf("the node's scheduling timeout (%v)", timeout)
}

func suffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

// failUnplaceable fails a replica nobody bid for within its pending
// timeout, naming the timeout, the unmet requirement and the closest peer.
func (mg *manager) failUnplaceable(j *JobRecord, t *TaskRecord, a *auction, timeout time.Duration) {
	mg.dropAuction(t.Key)
	reason := mg.unplaceableReason(a)
	mg.move(j, t, change{ev: evFail, exit: -1, reason: reason})
	full := fmt.Sprintf("task %s cannot be scheduled within %s: %s", t.Key.Task, timeoutText(j, timeout), reason)
	mg.event(j.ID, full)
	mg.endJob(j, JobFailed, full)
}

// unplaceableReason explains why no node bid: from the refusals received
// and the advert view, the requirement that the closest node misses.
func (mg *manager) unplaceableReason(a *auction) string {
	type miss struct {
		id     NodeID
		reason string
		stage  int
		cpu    int64
	}
	var misses []miss
	add := func(id NodeID, reason string, capv resource.Vector) {
		misses = append(misses, miss{id, reason, stageOf(reason), capv.CPU})
	}
	seen := map[NodeID]bool{}
	for _, nb := range a.nobids {
		seen[nb.Bidder] = true
		var capv resource.Vector
		if p := mg.view[nb.Bidder]; p != nil {
			capv = p.Capacity
		}
		add(nb.Bidder, nb.Reason, capv)
	}
	check := func(id NodeID, site string, labels map[string]string, lim resource.Enforcement, capv resource.Vector) {
		if seen[id] {
			return
		}
		why := couldHold(site, labels, lim, capv, a.offer.Request)
		if why == "" {
			why = "did not bid"
		}
		add(id, why, capv)
	}
	check(mg.cfg.Self, mg.cfg.Site, mg.cfg.Labels, mg.cfg.Limits, mg.con.capacity)
	for _, p := range mg.view {
		check(p.ID, p.Site, p.Labels, p.Limits, p.Capacity)
	}
	if len(misses) == 0 {
		return "no peer answered"
	}
	sort.Slice(misses, func(i, j int) bool {
		x, y := misses[i], misses[j]
		if x.stage != y.stage {
			return x.stage > y.stage
		}
		if x.cpu != y.cpu {
			return x.cpu > y.cpu
		}
		return x.id < y.id
	})
	best := misses[0]
	return fmt.Sprintf("%s (closest peer %s; %d peers considered)", best.reason, best.id, len(misses))
}

// stageOf ranks a refusal by how far the node got through the checks:
// a node that fails only on GPU memory is closer than one with too little
// CPU.
func stageOf(reason string) int {
	// A draining node passed every check: it would hold the task but for
	// its operator (agora drain).
	for i, p := range []string{"site", "label", "no container runtime", "limits", "cpu", "memory", "disk", "device", "gpu: none", "gpu model", "gpu memory", "gpu count", "gpu share", "no local account", "did not bid", "node draining"} {
		if strings.HasPrefix(reason, p) {
			return i
		}
	}
	return 0
}

// checkLeases places again, with a new epoch, every replica whose
// executor has not reported within the lease timeout. The old executor's
// later reports carry the old epoch and are rejected, so a replica that
// was partitioned away is judged stale — but for a success, taken late
// (lateSuccess) if the replica has not succeeded since.
func (mg *manager) checkLeases() {
	for j, t := range tasksOf(mg.dueJobs()) {
		if (t.State != TaskAwarded && t.State != TaskRunning) || t.LeaseUntil.IsZero() || mg.now.Before(t.LeaseUntil) {
			continue
		}
		why := fmt.Sprintf("lease lapsed: no report from %s for %v", t.Node, mg.cfg.LeaseTimeout)
		mg.event(j.ID, fmt.Sprintf("%s: %s; placing again with a new epoch", t.Key, why))
		if j.isGang(t.Key.Task) {
			mg.gang.gangReplicaEnded(j, t, TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: t.Node, State: TaskPreempted, ExitCode: -1, Reason: why})
			continue
		}
		mg.move(j, t, lost(mg.now, why))
	}
}

// endJobState moves job j, pending or running, to terminal state st; a
// job ends once, and any other move is a bug.
func (mg *manager) endJobState(j *JobRecord, st JobState, reason string) {
	if j.State.Terminal() || !st.Terminal() {
		panic(fmt.Sprintf("market: job %s cannot go from %s to %s", j.ID, j.State, st))
	}
	j.State, j.Reason, j.Finished = st, reason, mg.now
	mg.tix.done(j.ID)
	delete(mg.fo.adoptedAt, j.ID)
}

// pausedFor moves every lease of a replica this node manages, and every
// award deadline of its open rounds, d later: this node stood still for
// d (Market.Paused).
func (mg *manager) pausedFor(d time.Duration) {
	for j, t := range mg.openTasks() {
		if (t.State == TaskAwarded || t.State == TaskRunning) && !t.LeaseUntil.IsZero() {
			t.LeaseUntil = t.LeaseUntil.Add(d)
			mg.dl.retimeJob(j.ID)
		}
	}
	for k, a := range mg.auctions {
		if a.awardee != nil && !a.awardBy.IsZero() {
			a.awardBy = a.awardBy.Add(d)
			mg.dl.retimeAuction(k)
		}
	}
}

// maxOtherSidesRuns bounds the attempts noteOtherSidesRun adds to one
// replica's history: reports are the executors' to send, and a record
// must not grow with whatever a peer repeats.
const maxOtherSidesRuns = 4

// noteOtherSidesRun lists, in the history of replica t of job j, an
// attempt the record never placed whose executor reports to this node
// after a split was settled in its favour (split.go): the other side
// placed it from its own record, and it ran — or runs, until the
// CancelTask sent with the refusal stops it. The record keeps its one
// outcome; the history shows every run its manager heard of, so that a
// task that ran on both sides is seen to have (`agora status`, the
// array test's count of runs). Only jobs this node kept against a
// claimer (outranked) take such entries, once per executor and epoch,
// and at most maxOtherSidesRuns per replica.
func (mg *manager) noteOtherSidesRun(j *JobRecord, t *TaskRecord, s TaskStatus) {
	if len(mg.sp.outranked[j.ID]) == 0 || s.Epoch == t.Epoch || s.Node == "" || len(t.History) == 0 {
		return // (the last entry is the record's own attempt, which the others come before)
	}
	if s.State != TaskRunning && !s.State.Terminal() {
		return
	}
	added := 0
	for _, a := range t.History {
		if a.Node == s.Node && a.Epoch == s.Epoch {
			return
		}
		if strings.HasPrefix(a.Reason, otherSidesRun) {
			added++
		}
	}
	if added >= maxOtherSidesRuns {
		return
	}
	a := AttemptRecord{Attempt: s.Attempt, Epoch: s.Epoch, Node: s.Node, State: TaskCancelled, ExitCode: s.ExitCode,
		Reason: fmt.Sprintf("%s (epoch %d), reported %s: not this record's attempt", otherSidesRun, s.Epoch, s.State), Awarded: s.Time}
	if s.State == TaskRunning {
		a.ExitCode, a.Started = -1, s.Time
	} else {
		a.Finished = s.Time
	}
	// Before the record's own latest attempt, which stays last: the
	// replica's state, its logs and its node are read from that one.
	t.History = slices.Insert(t.History, len(t.History)-1, a)
	mg.touch(j.ID)
}

// otherSidesRun begins the reason of an attempt noteOtherSidesRun lists.
const otherSidesRun = "placed by the other side of a split"
