package market

import (
	"fmt"
	"time"
)

// The task replica state machine. A manager changes a replica's state
// only through move, which looks the change up in taskMoves, sets the
// record's fields and opens or closes its attempt record; a move the
// table does not allow is a bug, and move panics naming it.
//
//	waiting ─ready─▶ pending ─award─▶ awarded ─start─▶ running ─succeed─▶ succeeded
//	                  ▲  │                                   │
//	                  │  └──fail──▶ failed ◀──────fail───────┤
//	                  └────────── retry, requeue ────────────┘
//	                  (awarded moves as running does, and may be stolen)
//	waiting, pending, awarded, running ──cancel──▶ cancelled
//
//	event         from                            to
//	ready         waiting                         pending     its dependencies succeeded
//	award         pending                         awarded     an executor accepted (a gang: committed)
//	take-over     pending, awarded, running       awarded     an executor reports the previous manager's award
//	start         awarded                         running
//	succeed       awarded, running                succeeded
//	retry         awarded, running                pending     failed, placed again after a back-off
//	requeue       awarded, running                pending     preempted, cancelled, executor or lease lost
//	stolen        awarded                         pending     an idle node took it from its executor's queue
//	fail          pending, awarded, running       failed      no retries left, or no node can hold it
//	cancel        waiting, pending, awarded,      cancelled   its job ended first
//	              running
//	gang-requeue  awarded, running, succeeded     pending     a gang member stopped: the gang runs again
//	gang-fail     awarded, running, succeeded     failed      a gang member failed its last retry
//	late-succeed  pending, awarded, running       succeeded   an earlier attempt, taken for lost, succeeded
//
// Succeeded, failed and cancelled are terminal but for a gang's replicas:
// a gang runs whole, so when one member stops without success the ones
// that succeeded run again with it, or fail with it. Preempted is a
// state executors report, never one a manager's record holds. A job is
// pending until its first award, then running, and ends succeeded (every
// replica succeeded), failed or cancelled, once (endJobState).

// taskEvent names a change of a task replica's state.
type taskEvent uint8

const (
	evReady       taskEvent = iota // its dependencies succeeded
	evAward                        // an executor accepted it (a gang: committed)
	evTakeOver                     // an executor reports an award the previous manager made
	evStart                        // its executor started it
	evSucceed                      // it exited 0
	evRetry                        // it failed and is placed again after a back-off
	evRequeue                      // it stopped without failing, or its executor was lost: placed again
	evStolen                       // an idle node took it from its executor's queue
	evFail                         // no retries left, or no node can hold it
	evCancel                       // its job ended before it did
	evGangRequeue                  // its gang is placed again
	evGangFail                     // its gang failed for good
	evLateSucceed                  // an earlier attempt, thought lost, reports it exited 0
)

var taskEventNames = [...]string{"ready", "award", "take-over", "start", "succeed", "retry", "requeue", "stolen", "fail", "cancel", "gang-requeue", "gang-fail", "late-succeed"}

func (e taskEvent) String() string {
	if int(e) < len(taskEventNames) {
		return taskEventNames[e]
	}
	return fmt.Sprintf("event(%d)", e)
}

// taskMove is one row of the transition table: the states a replica may
// be in for the event, and the state it moves to.
type taskMove struct {
	from []TaskState
	to   TaskState
}

// taskMoves is the transition table.
var taskMoves = map[taskEvent]taskMove{
	evReady:       {[]TaskState{TaskWaiting}, TaskPending},
	evAward:       {[]TaskState{TaskPending}, TaskAwarded},
	evTakeOver:    {[]TaskState{TaskPending, TaskAwarded, TaskRunning}, TaskAwarded},
	evStart:       {[]TaskState{TaskAwarded}, TaskRunning},
	evSucceed:     {[]TaskState{TaskAwarded, TaskRunning}, TaskSucceeded},
	evRetry:       {[]TaskState{TaskAwarded, TaskRunning}, TaskPending},
	evRequeue:     {[]TaskState{TaskAwarded, TaskRunning}, TaskPending},
	evStolen:      {[]TaskState{TaskAwarded}, TaskPending},
	evFail:        {[]TaskState{TaskPending, TaskAwarded, TaskRunning}, TaskFailed},
	evCancel:      {[]TaskState{TaskWaiting, TaskPending, TaskAwarded, TaskRunning}, TaskCancelled},
	evGangRequeue: {[]TaskState{TaskAwarded, TaskRunning, TaskSucceeded}, TaskPending},
	evGangFail:    {[]TaskState{TaskAwarded, TaskRunning, TaskSucceeded}, TaskFailed},
	evLateSucceed: {[]TaskState{TaskPending, TaskAwarded, TaskRunning}, TaskSucceeded},
}

// nextState is the state a replica in from moves to on ev, or an error
// when the table does not allow the move.
func nextState(from TaskState, ev taskEvent) (TaskState, error) {
	mv, ok := taskMoves[ev]
	if !ok {
		return "", fmt.Errorf("market: unknown task event %v", ev)
	}
	for _, s := range mv.from {
		if s == from {
			return mv.to, nil
		}
	}
	return "", fmt.Errorf("market: task event %v is not allowed in state %s", ev, from)
}

// change is a transition and what comes with it; which fields count
// depends on the event.
type change struct {
	ev    taskEvent
	node  NodeID    // award, take-over: the executor
	epoch uint64    // take-over: the executor's epoch
	at    time.Time // start: when it started; retry, requeue, gang-requeue: not before
	// exit and reason are the replica's exit code and reason (succeed,
	// retry, fail, gang-requeue, gang-fail) and, unless ended says
	// otherwise, its open attempt's.
	exit   int
	reason string
	// ended is how the open attempt ends on requeue, gang-requeue and
	// gang-fail, where the cause decides (the other events say how).
	ended attemptEnd
}

// attemptEnd is how an attempt ended: its state, exit code and reason.
type attemptEnd struct {
	state  TaskState
	exit   int
	reason string
}

// move changes replica t of job j as c says, with its attempt record: an
// award or take-over opens an attempt, a start marks it started, and any
// other move out of awarded or running closes it. It panics when the
// transition table does not allow the move.
func (sh *shared) move(j *JobRecord, t *TaskRecord, c change) {
	to, err := nextState(t.State, c.ev)
	if err != nil {
		panic(fmt.Sprintf("%v (%s epoch %d)", err, t.Key, t.Epoch))
	}
	from := t.State
	switch c.ev {
	case evReady:
		t.Ready = sh.now
	case evAward, evTakeOver:
		if c.ev == evTakeOver {
			if from == TaskAwarded || from == TaskRunning {
				sh.closeAttempt(j, t, TaskPreempted, -1, fmt.Sprintf("superseded by epoch %d on %s", c.epoch, c.node))
			}
			t.Epoch = c.epoch
		}
		t.Node, t.LeaseUntil = c.node, sh.now.Add(sh.cfg.LeaseTimeout)
		sh.dl.retimeJob(t.Key.Job)
		t.Attempts++
		t.History = append(t.History, AttemptRecord{Attempt: t.Attempts, Epoch: t.Epoch, Node: c.node, State: TaskAwarded, Awarded: sh.now})
		sh.jobStarted(j)
	case evStart:
		t.Started = c.at
		if h := lastAttempt(t); h != nil {
			h.State, h.Started = TaskRunning, c.at
		}
		sh.jobStarted(j)
	case evSucceed:
		sh.closeAttempt(j, t, TaskSucceeded, c.exit, c.reason)
		t.ExitCode, t.Reason, t.Finished = c.exit, "", sh.now
	case evLateSucceed:
		if from == TaskAwarded || from == TaskRunning {
			sh.closeAttempt(j, t, TaskCancelled, -1, fmt.Sprintf("superseded: epoch %d on %s succeeded", c.epoch, c.node))
		}
		for i := range t.History {
			if h := &t.History[i]; h.Epoch == c.epoch && h.Node == c.node {
				h.State, h.ExitCode, h.Reason = TaskSucceeded, c.exit, c.reason
			}
		}
		t.Epoch, t.Node = c.epoch, c.node
		t.ExitCode, t.Reason, t.Finished = c.exit, "", sh.now
	case evRetry:
		sh.closeAttempt(j, t, TaskFailed, c.exit, c.reason)
		t.ExitCode, t.Reason = c.exit, c.reason
		sh.pending(t, c.at)
	case evRequeue:
		sh.closeAttempt(j, t, c.ended.state, c.ended.exit, c.ended.reason)
		sh.pending(t, c.at)
	case evStolen:
		if h := lastAttempt(t); h != nil && h.Finished.IsZero() {
			h.State, h.Reason, h.Finished = TaskCancelled, c.reason, sh.now
		}
		t.Attempts-- // it never ran there
		sh.pending(t, sh.now)
	case evFail:
		if from == TaskAwarded || from == TaskRunning {
			sh.closeAttempt(j, t, TaskFailed, c.exit, c.reason)
		}
		t.ExitCode, t.Reason, t.Finished = c.exit, c.reason, sh.now
	case evCancel:
		if from == TaskAwarded || from == TaskRunning {
			sh.closeAttempt(j, t, TaskCancelled, -1, c.reason)
		}
		t.Finished = sh.now
	case evGangRequeue, evGangFail:
		switch {
		case from == TaskSucceeded:
			// It runs again (or fails) with its gang: its run no
			// longer counts as the replica's success.
			if h := lastAttempt(t); h != nil {
				h.State = TaskCancelled
			}
		case from == TaskAwarded || from == TaskRunning:
			sh.closeAttempt(j, t, c.ended.state, c.ended.exit, c.ended.reason)
		}
		t.ExitCode, t.Reason = c.exit, c.reason
		if c.ev == evGangRequeue {
			sh.pending(t, c.at)
		} else {
			t.Finished = sh.now
		}
	}
	t.State = to
	sh.touch(j.ID)
}

// pending makes t pending, to be placed from notBefore on.
func (sh *shared) pending(t *TaskRecord, notBefore time.Time) {
	t.Node, t.NotBefore, t.Ready = "", notBefore, notBefore
	sh.dl.retimeJob(t.Key.Job)
	sh.dropAuction(t.Key)
}

// closeAttempt ends t's open attempt, if it has one.
func (sh *shared) closeAttempt(j *JobRecord, t *TaskRecord, st TaskState, code int, reason string) {
	if h := lastAttempt(t); h != nil && h.Finished.IsZero() {
		h.State, h.ExitCode, h.Reason, h.Finished = st, code, reason, sh.now
		// t.Ready is still this attempt's: a retry sets it after.
		e := AttemptEnded{Key: t.Key, Name: j.Spec.Name, Type: j.Spec.Type, Owner: j.Owner, Submitted: j.Submitted, Ready: t.Ready, Attempt: *h}
		if ts, ok := j.Spec.Task(t.Key.Task); ok {
			e.Image, e.Request = ts.Image != "", ts.Request
		}
		sh.emit(e)
	}
}

// jobStarted moves a pending job to running.
func (sh *shared) jobStarted(j *JobRecord) {
	if j.State == JobPending {
		j.State = JobRunning
	}
}

// lost is the change of a replica whose executor was lost (gone, its
// lease lapsed, its manager or node restarted): it is placed again from
// now, the attempt ending failed without counting as a failure.
func lost(now time.Time, why string) change {
	return change{ev: evRequeue, at: now, ended: attemptEnd{TaskFailed, -1, why}}
}
