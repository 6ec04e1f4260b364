package market

import (
	"strings"
	"testing"
	"time"
)

// TestTransitionTable checks every (state, event) pair against the state
// diagram in states.go, written out here independently of taskMoves:
// each allowed move leads where the diagram says, every other is an
// error naming the event and the state.
func TestTransitionTable(t *testing.T) {
	W, P, A, R := TaskWaiting, TaskPending, TaskAwarded, TaskRunning
	S, F, C := TaskSucceeded, TaskFailed, TaskCancelled
	want := map[taskEvent]map[TaskState]TaskState{
		evReady:       {W: P},
		evAward:       {P: A},
		evTakeOver:    {P: A, A: A, R: A},
		evStart:       {A: R},
		evSucceed:     {A: S, R: S},
		evRetry:       {A: P, R: P},
		evRequeue:     {A: P, R: P},
		evStolen:      {A: P},
		evFail:        {P: F, A: F, R: F},
		evCancel:      {W: C, P: C, A: C, R: C},
		evGangRequeue: {A: P, R: P, S: P},
		evGangFail:    {A: F, R: F, S: F},
		evLateSucceed: {P: S, A: S, R: S},
	}
	states := []TaskState{W, P, A, R, S, F, C, TaskPreempted}
	for ev := evReady; ev <= evLateSucceed; ev++ {
		for _, from := range states {
			to, err := nextState(from, ev)
			exp, ok := want[ev][from]
			switch {
			case ok && (err != nil || to != exp):
				t.Errorf("%v from %s: %s, %v; want %s", ev, from, to, err, exp)
			case !ok && err == nil:
				t.Errorf("%v from %s allowed (to %s); the diagram has no such move", ev, from, to)
			case !ok && !strings.Contains(err.Error(), ev.String()) || !ok && !strings.Contains(err.Error(), string(from)):
				t.Errorf("%v from %s: error %q names neither", ev, from, err)
			}
		}
	}
	if len(taskMoves) != len(want) {
		t.Errorf("%d events in the table, %d in the diagram", len(taskMoves), len(want))
	}
	if _, err := nextState(P, evLateSucceed+1); err == nil {
		t.Error("an unknown event moved a replica")
	}
	// No move leaves a terminal state but a gang's: a replica succeeds,
	// fails or is cancelled once.
	for ev, mv := range taskMoves {
		for _, from := range mv.from {
			if from.Terminal() && ev != evGangRequeue && ev != evGangFail {
				t.Errorf("%v leaves terminal state %s", ev, from)
			}
		}
	}
}

// TestIllegalMovePanics: the core never applies a move the table
// forbids; doing so is a bug and stops the market at once.
func TestIllegalMovePanics(t *testing.T) {
	m, err := New(Config{Self: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	j := &JobRecord{ID: "j", Tasks: []TaskRecord{{Key: TaskKey{Job: "j", Task: "t"}, State: TaskSucceeded}}}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "start is not allowed in state succeeded") {
			t.Fatalf("recovered %v", r)
		}
	}()
	m.move(j, &j.Tasks[0], change{ev: evStart})
}

// TestMoveKeepsAttempts: a replica's attempt record opens with its award,
// is marked started with its start, and closes with the move that ends
// it, as the cause says.
func TestMoveKeepsAttempts(t *testing.T) {
	m, err := New(Config{Self: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	m.now = t0
	j := &JobRecord{ID: "j", State: JobPending, Tasks: []TaskRecord{{Key: TaskKey{Job: "j", Task: "t"}, State: TaskPending, Epoch: 1}}}
	tr := &j.Tasks[0]
	m.move(j, tr, change{ev: evAward, node: "n1"})
	if j.State != JobRunning || tr.Node != "n1" || tr.Attempts != 1 || len(tr.History) != 1 || tr.History[0].State != TaskAwarded {
		t.Fatalf("after award: job %s, %+v", j.State, tr)
	}
	m.move(j, tr, change{ev: evStart, at: t0})
	m.move(j, tr, lost(t0, "executor n1 is gone"))
	h := tr.History[0]
	if tr.State != TaskPending || tr.Node != "" || h.State != TaskFailed || h.Reason != "executor n1 is gone" || h.Started != t0 || h.Finished.IsZero() || tr.Failures != 0 {
		t.Fatalf("after the executor was lost: %+v", tr)
	}
	m.move(j, tr, change{ev: evAward, node: "n2"})
	m.move(j, tr, change{ev: evTakeOver, node: "n3", epoch: 7})
	if tr.Epoch != 7 || tr.Node != "n3" || tr.Attempts != 3 || tr.History[1].State != TaskPreempted || tr.History[2].Node != "n3" {
		t.Fatalf("after a take-over: %+v", tr)
	}
	m.move(j, tr, change{ev: evSucceed, exit: 0, reason: "exit status 0"})
	if tr.State != TaskSucceeded || tr.History[2].State != TaskSucceeded || tr.Finished.IsZero() {
		t.Fatalf("after success: %+v", tr)
	}
}

// TestAttemptEndedReports: every attempt that closes is reported once
// (market.AttemptEnded, the manager's accounting), with the time that
// attempt became ready — not the retry's, which the same move sets.
func TestAttemptEndedReports(t *testing.T) {
	m, err := New(Config{Self: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	m.now = t0
	j := &JobRecord{ID: "j", Owner: "alice", Submitted: t0, State: JobPending,
		Tasks: []TaskRecord{{Key: TaskKey{Job: "j", Task: "t"}, State: TaskPending, Epoch: 1, Ready: t0}}}
	tr := &j.Tasks[0]
	m.move(j, tr, change{ev: evAward, node: "n1"})
	m.move(j, tr, change{ev: evStart, at: t0.Add(time.Second)})
	m.now = t0.Add(5 * time.Second)
	m.move(j, tr, change{ev: evRetry, exit: 3, reason: "exit status 3", at: t0.Add(9 * time.Second)})
	m.now = t0.Add(10 * time.Second)
	m.move(j, tr, change{ev: evAward, node: "n2"})
	m.move(j, tr, change{ev: evSucceed, exit: 0, reason: "exit status 0"})
	var ended []AttemptEnded
	for _, e := range m.out {
		if a, ok := e.(AttemptEnded); ok {
			ended = append(ended, a)
		}
	}
	if len(ended) != 2 {
		t.Fatalf("%d attempts reported, want 2: %+v", len(ended), ended)
	}
	first, second := ended[0], ended[1]
	if !first.Ready.Equal(t0) || first.Attempt.State != TaskFailed || first.Attempt.ExitCode != 3 || first.Attempt.Node != "n1" ||
		!first.Attempt.Started.Equal(t0.Add(time.Second)) || first.Owner != "alice" || !first.Submitted.Equal(t0) {
		t.Fatalf("first attempt reported as %+v", first)
	}
	if !second.Ready.Equal(t0.Add(9*time.Second)) || second.Attempt.State != TaskSucceeded || second.Attempt.Node != "n2" {
		t.Fatalf("second attempt reported as %+v", second)
	}
}
