package market

import (
	"fmt"
	"strings"
	"time"
)

// Why a task waits, and when it is predicted to start. Neither is kept in
// the record: Job works them out for the copy it returns, from the live
// auction, gang and award state, so that status shows them where the
// job's manager answers.

// awardNote is the start the winning bid predicted for an awarded
// replica, for that epoch.
type awardNote struct {
	epoch uint64
	start time.Time
}

// noteAward remembers the predicted start of the bid just awarded, or
// the later one the contractor gave when it accepted (start).
func (au *auctioneer) noteAward(t *TaskRecord, b Bid, start time.Time) {
	if !start.IsZero() {
		b.Start = start
	}
	if au.awardStart == nil {
		au.awardStart = map[TaskKey]awardNote{}
	}
	if len(au.awardStart) > 4*maxAwardNotes {
		clear(au.awardStart) // the notes of long-gone replicas
	}
	au.awardStart[t.Key] = awardNote{epoch: t.Epoch, start: b.Start}
}

// maxAwardNotes sizes the award notes kept before they start afresh.
const maxAwardNotes = 1 << 14

// explain fills in, on a copy of a record, why each unfinished replica
// waits (TaskRecord.Waiting) and, for one awarded and queued, the start
// its winning bid predicted (TaskRecord.PredictedStart).
func (au *auctioneer) explain(j *JobRecord) {
	if j.State.Terminal() {
		return
	}
	j.Factors = au.factorsOf(j)
	succeeded := map[string]int{}
	replicas := map[string]int{}
	for _, t := range j.Tasks {
		replicas[t.Key.Task]++
		if t.State == TaskSucceeded {
			succeeded[t.Key.Task]++
		}
	}
	after := map[string][]string{}
	for _, ts := range j.Spec.Tasks {
		after[ts.Name] = ts.After
	}
	var memo explainMemo
	for i := range j.Tasks {
		t := &j.Tasks[i]
		switch t.State {
		case TaskWaiting:
			var deps []string
			for _, d := range after[t.Key.Task] {
				if succeeded[d] < replicas[d] {
					deps = append(deps, fmt.Sprintf("%s (%d of %d done)", d, succeeded[d], replicas[d]))
				}
			}
			t.Waiting = "waiting for its dependencies: " + strings.Join(deps, ", ")
		case TaskPending:
			t.Waiting = au.pendingReason(j, t, &memo)
		case TaskAwarded:
			t.Waiting = "queued on " + string(t.Node)
			if n, ok := au.awardStart[t.Key]; ok && n.epoch == t.Epoch {
				t.PredictedStart = n.start
				if d := n.start.Sub(au.now); d > 0 {
					t.Waiting += fmt.Sprintf(" behind its earlier work; predicted start in %v", d.Round(time.Second))
				}
			}
		}
	}
}

// pendingReason says why a pending replica is not placed yet.
// explainMemo keeps what explain works out once per job rather than once
// per pending replica (an array has up to spec.MaxReplicas): the owner's
// usage, the array throttles and the replicas in flight.
type explainMemo struct {
	usage     map[string]*UserUsage
	throttles map[string]int
	inFlight  map[string]int
}

func (au *auctioneer) pendingReason(j *JobRecord, t *TaskRecord, memo *explainMemo) string {
	if _, limited := au.limitedUser(j); limited {
		if memo.usage == nil {
			memo.usage = map[string]*UserUsage{j.Owner: au.userUsage(j.Owner)}
		}
		if why := au.overUserLimit(j, t, memo.usage); why != "" {
			return why
		}
	}
	if !t.NotBefore.IsZero() && au.now.Before(t.NotBefore) {
		return fmt.Sprintf("backing off after a failed attempt: placed again in %v", t.NotBefore.Sub(au.now).Round(time.Second))
	}
	if j.isGang(t.Key.Task) {
		g := au.gangs[gangID(j.ID, t.Key.Task)]
		switch {
		case g == nil:
			return "gang: waiting for its round"
		case g.holding:
			held := 0
			for _, ok := range g.holdOK {
				if ok {
					held++
				}
			}
			return fmt.Sprintf("gang: holding resources on %d of %d nodes before all start together", held, g.size)
		}
		return fmt.Sprintf("gang: looking for %d replicas' room at once", g.size)
	}
	a := au.auctions[t.Key]
	if a == nil {
		if limit := au.arrayThrottle(j, t.Key.Task, &memo.throttles); limit > 0 {
			n, ok := memo.inFlight[t.Key.Task]
			if !ok {
				n = au.arrayInFlight(j, t.Key.Task)
				if memo.inFlight == nil {
					memo.inFlight = map[string]int{}
				}
				memo.inFlight[t.Key.Task] = n
			}
			if n >= limit {
				return fmt.Sprintf("array throttle: %d of its task's replicas awarded or running, the most at once (%%%d)", n, limit)
			}
		}
		return "waiting for an auction round"
	}
	switch {
	case len(a.invited) == 0:
		return "no node fits: " + au.mgr.unplaceableReason(a)
	case len(a.bids) > 0:
		return fmt.Sprintf("auction round %d: %d bids in, awarding", a.id.Round, len(a.bids))
	case len(a.nobids) > 0:
		return "no node fits so far: " + au.mgr.unplaceableReason(a)
	}
	return fmt.Sprintf("auction round %d: %d nodes invited, no answer yet", a.id.Round, len(a.invited))
}
