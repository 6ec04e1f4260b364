package market

import (
	"fmt"

	"github.com/agora-sched/agora/devices/resource"
	"maps"
	"slices"
	"sort"
	"time"
)

// Reclaim after a restart. A manager that is gone longer than its peers'
// failure detection has its unfinished jobs taken over by the holders of
// their records' copies, and their executors report to the adopters from
// then on. Restoring such a job as well would place it twice. So a
// restarted node restores its finished jobs at once but holds the others
// back until its view has settled, then asks the peers closest to each
// job ID whether one of them manages it now (ManagerQuery). The view has
// settled an advert interval and a half after the start, an interval
// after the first advert, and once every expected peer has advertised,
// or after ten intervals whatever came: the expected peers are, for each
// held job, the ones among the peers the node knew before (its
// membership) that it would ask if all were live. Peers do not reappear
// in the view together: a node's connections come up one by one, and
// under load an adopter may advertise here half a second after the
// others. Settling before it had, the node would not ask it and would
// restore a job it manages. A job a
// peer took over is forgotten here (ForgetJob, its event log kept and
// saying so); the others are restored once every peer asked has answered.
// A peer silent for QueryTimeout is asked again, reclaimAsks times in
// all, and then counts as not having the job; one that leaves the view
// counts so at once. Counting a silent adopter out would restore its job
// here too and run it twice, and the first answer a peer sends a
// restarted node is the one most likely lost: its stream to the node's
// previous run fails only on the write after.
//
// While a job is held the market does not manage it: Job does not find
// it, Held lists it, Cancel refuses it, and executors' reports for it go
// unanswered (they repeat them). Nothing is taken over before the view
// has settled either (failover.go).

// reclaim is a restarted node's state until its view settles and its
// held jobs are restored or given up.
type reclaim struct {
	pending bool                 // Reclaim was called and the view has not settled
	start   time.Time            // when Reclaim was called
	first   time.Time            // the first advert after it
	expect  map[NodeID]bool      // known peers not yet advertised that the held jobs need asked
	lastExp time.Time            // when the last expected peer advertised
	held    map[string]JobRecord // unfinished jobs held back
	asked   time.Time            // when the questions last went out; zero before
	asks    int                  // how many times they went out
	waiting map[string]map[NodeID]bool
	// adopters are the peers that answered that they manage a held job.
	adopters map[string][]NodeID
	// exits are this node's attempts that finished while it was down
	// (the executor's durable record): applied as reports when their
	// jobs are restored, instead of placing them again.
	exits map[TaskKey]TaskExit
}

// TaskExit is an attempt of this node's that finished while the node was
// down, or shortly before it went down, as the executor found it
// recorded at restart.
type TaskExit struct {
	Key      TaskKey
	Epoch    uint64
	Attempt  int
	ExitCode int
	Reason   string
	Time     time.Time
	Outputs  *DataRef // a success's outputs, kept after the restart
	// Manager is the node the attempt reported to; an exit for another
	// node's job is reported to it again (its report, or the ack, may
	// have been lost as this node went down). Empty or this node: a job
	// managed here, applied when it is restored.
	Manager NodeID
}

// reclaimSettleMax bounds, in advert intervals, the wait for a settled
// view.
const reclaimSettleMax = 10

// reclaimAsks is how many times a silent peer is asked about a held job.
const reclaimAsks = 3

// Resumed is an attempt of this node's that outlived the node's crash:
// its process still ran at the restart, and the caller re-attached to it
// instead of killing it, so that it does not start a second time.
type Resumed struct {
	Task    TaskSpec
	Alloc   resource.Allocation
	Manager NodeID
	Started time.Time
}

// Resume gives a restarted market the attempts its caller re-attached
// to: each runs on as a contract of this node's, holding its resources
// and renewing its lease with its manager, and its exit is reported
// through TaskExited as any other's. It is called before Reclaim, so that
// the jobs this node manages find their attempts running here. Gang
// replicas are not resumed (a gang runs whole: its manager places it
// again); nor is an attempt whose resources no longer fit the capacity.
func (m *Market) Resume(now time.Time, runs []Resumed) {
	m.enter(now)
	defer m.leave()
	c := m.con
	for _, r := range runs {
		k := r.Task.Key
		req := r.Task.Request
		if _, dup := c.running[k]; dup || len(r.Task.Peers) > 0 || req.CPU > c.free.CPU || req.Memory > c.free.Memory || req.Disk > c.free.Disk {
			continue
		}
		c.seq++
		ct := &contract{spec: r.Task, manager: r.Manager, awarder: r.Manager, accepted: r.Started, seq: c.seq, alloc: r.Alloc,
			started: r.Started, running: true, beat: m.now}
		ct.runtime = c.predictRuntime(r.Task.TaskOffer, m.now)
		c.free.Take(r.Task.Request, r.Alloc)
		c.running[k] = ct
		m.event(k.Job, fmt.Sprintf("%s: epoch %d re-attached after this node restarted; it runs on", k, r.Task.Epoch))
		m.send(r.Manager, TaskStatus{Key: k, Epoch: r.Task.Epoch, Attempt: r.Task.Attempt, Node: m.cfg.Self, State: TaskRunning, Time: m.now})
	}
}

// Reclaim loads a restarted node's job records: finished jobs at once,
// unfinished ones once the node has asked its peers about them (see
// above). It also marks the view unsettled until then: nothing is taken
// over before. known are the peers the node knew before the restart (its
// membership); the view waits for those it will need to ask. A node
// starting afresh calls it with no records.
func (m *Market) Reclaim(now time.Time, jobs []JobRecord, known []NodeID, exits ...TaskExit) {
	m.enter(now)
	defer m.leave()
	var done []JobRecord
	r := &m.fo.reclaim
	r.pending, r.start, r.first, r.asked, r.asks = true, m.now, time.Time{}, time.Time{}, 0
	r.expect, r.lastExp = map[NodeID]bool{}, time.Time{}
	r.held, r.waiting, r.adopters = map[string]JobRecord{}, map[string]map[NodeID]bool{}, map[string][]NodeID{}
	r.exits = map[TaskKey]TaskExit{}
	for _, x := range exits {
		if x.Manager != "" && x.Manager != m.cfg.Self {
			m.fo.reportAgain(x)
			continue
		}
		r.exits[x.Key] = x
	}
	for _, j := range jobs {
		if _, dup := m.jobs[j.ID]; dup {
			continue
		}
		if j.State.Terminal() {
			done = append(done, j)
		} else {
			r.held[j.ID] = j
		}
	}
	m.mgr.restore(done)
	others := slices.DeleteFunc(slices.Clone(known), func(id NodeID) bool { return id == m.cfg.Self })
	for id := range r.held {
		for _, p := range Closest(id, others, m.fo.reclaimAsk()) {
			r.expect[p] = true
		}
	}
}

// reportAgain sends the final report of an attempt that ended before a
// restart to its manager, and repeats it until acknowledged, as
// TaskExited does. A repeat of a report the manager had applied is
// acknowledged and changes nothing; one it had missed settles the
// replica — even after the manager placed it again (lateSuccess), so the
// crash of an executor right after a task's end does not make it run
// twice (the fault campaign's crash seed 7405).
func (fo *failover) reportAgain(x TaskExit) {
	st := TaskStatus{Key: x.Key, Epoch: x.Epoch, Attempt: x.Attempt, Node: fo.cfg.Self, State: TaskSucceeded, ExitCode: x.ExitCode,
		Reason: x.Reason, Time: x.Time, Outputs: x.Outputs, AckWanted: true}
	if x.ExitCode != 0 {
		st.State, st.Outputs = TaskFailed, nil
	}
	if fo.con.resultOf[resultID{x.Key, x.Epoch, x.Attempt}] != nil {
		return
	}
	fo.send(x.Manager, st)
	fo.con.addResult(&pendingResult{to: x.Manager, awarder: x.Manager, st: st, next: fo.now.Add(fo.cfg.LeaseEvery), gap: fo.cfg.LeaseEvery,
		expires: fo.now.Add(fo.cfg.LeaseTimeout + fo.cfg.LeaseEvery*(1<<maxResultRepeats-1))})
}

// Held lists the unfinished jobs held back after a restart, oldest first.
func (m *Market) Held() []JobRecord {
	out := make([]JobRecord, 0, len(m.fo.reclaim.held))
	for _, j := range m.fo.reclaim.held {
		out = append(out, j.Clone())
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Submitted.Equal(out[b].Submitted) {
			return out[a].Submitted.Before(out[b].Submitted)
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// settled reports whether the view is worth acting on: no restart is
// waiting for it to settle.
func (fo *failover) settled() bool { return !fo.reclaim.pending }

// sawAdvert notes the first advert after a restart, and an expected
// peer's.
func (fo *failover) sawAdvert(p NodeID) {
	r := &fo.reclaim
	if !r.pending {
		return
	}
	if r.first.IsZero() {
		r.first = fo.now
	}
	if r.expect[p] {
		delete(r.expect, p)
		r.lastExp = fo.now
	}
}

// settleAt is when the view counts as settled, from what is known now.
func (fo *failover) settleAt() time.Time {
	r := &fo.reclaim
	iv := fo.cfg.AdvertInterval
	floor, limit := r.start.Add(iv+iv/2), r.start.Add(reclaimSettleMax*iv)
	switch {
	case len(r.expect) > 0:
		return limit
	case !r.first.IsZero():
		return maxTime(floor, minTime(maxTime(r.first.Add(iv), r.lastExp), limit))
	case fo.cfg.Solo:
		return floor // alone: nobody can have taken anything over
	}
	return limit
}

// reclaimDue settles the view when it is time, asks about the held jobs,
// and restores them once answered.
func (fo *failover) reclaimDue() {
	r := &fo.reclaim
	if !r.pending && len(r.held) == 0 {
		return
	}
	if r.pending {
		if fo.now.Before(fo.settleAt()) {
			return
		}
		r.pending = false
		fo.settledAt = fo.now
		if r.first.IsZero() && !fo.cfg.Solo {
			fo.event("", fmt.Sprintf("restart: no advert within %v; acting on the view as it is", reclaimSettleMax*fo.cfg.AdvertInterval))
		}
		fo.askHeld()
		fo.adoptSettled()
		fo.sp.claimOrigins()
		return
	}
	if fo.now.Sub(r.asked) < fo.cfg.QueryTimeout {
		return
	}
	if r.asks >= reclaimAsks {
		fo.finishReclaim()
		return
	}
	r.asked, r.asks = fo.now, r.asks+1
	for _, id := range slices.Sorted(maps.Keys(r.held)) {
		for _, p := range slices.Sorted(maps.Keys(r.waiting[id])) {
			fo.send(p, ManagerQuery{Job: id, From: fo.cfg.Self})
		}
	}
}

// reclaimPeerGone counts a peer that left the view as not having any
// held job it was asked about.
func (fo *failover) reclaimPeerGone(id NodeID) {
	r := &fo.reclaim
	if len(r.waiting) == 0 {
		return
	}
	for _, job := range slices.Sorted(maps.Keys(r.held)) {
		if w := r.waiting[job]; w[id] {
			delete(w, id)
			if len(w) == 0 {
				delete(r.waiting, job)
			}
		}
	}
	if len(r.waiting) == 0 && !r.asked.IsZero() {
		fo.finishReclaim()
	}
}

// askHeld asks the peers closest to each held job whether they manage it.
func (fo *failover) askHeld() {
	r := &fo.reclaim
	r.asked, r.asks = fo.now, 1
	for _, id := range slices.Sorted(maps.Keys(r.held)) {
		peers := fo.closestPeers(id, fo.reclaimAsk(), "")
		if len(peers) == 0 {
			continue
		}
		r.waiting[id] = map[NodeID]bool{}
		for _, p := range peers {
			r.waiting[id][p] = true
			fo.send(p, ManagerQuery{Job: id, From: fo.cfg.Self})
		}
	}
	if len(r.waiting) == 0 {
		fo.finishReclaim()
	}
}

// reclaimAnswer takes a peer's answer about a held job.
func (fo *failover) reclaimAnswer(a ManagerAnswer) {
	r := &fo.reclaim
	w := r.waiting[a.Job]
	if !w[a.From] {
		return
	}
	delete(w, a.From)
	if len(w) == 0 {
		delete(r.waiting, a.Job)
	}
	if a.Manages && !slices.Contains(r.adopters[a.Job], a.From) {
		r.adopters[a.Job] = append(r.adopters[a.Job], a.From)
	}
	if len(r.waiting) == 0 {
		fo.finishReclaim()
	}
}

// finishReclaim restores the held jobs no peer took over and forgets the
// others.
func (fo *failover) finishReclaim() {
	r := &fo.reclaim
	var keep []JobRecord
	for _, id := range slices.Sorted(maps.Keys(r.held)) {
		ps := r.adopters[id]
		if len(ps) == 0 {
			keep = append(keep, r.held[id])
			continue
		}
		who := string(ps[0])
		for _, p := range ps[1:] {
			who += " and " + string(p)
		}
		fo.event(id, fmt.Sprintf("manager restarted: %s took the job over meanwhile; not restored here", who))
		// Two adopters (on two sides of a cut, say) each hear of the
		// next, and meet (split.go); later claims here name the first.
		// Their claims to this node, the job's first manager, may have
		// come before it knew, and found no one (the fault campaign's
		// seed 17908).
		for i, p := range ps {
			if len(ps) > 1 {
				fo.send(p, ManagerAnswer{Job: id, From: fo.cfg.Self, Successor: ps[(i+1)%len(ps)]})
			}
		}
		if len(fo.sp.yieldedTo) >= maxGone {
			clear(fo.sp.yieldedTo)
		}
		fo.sp.yieldedTo[id] = ps[0]
		fo.emit(ForgetJob{Job: id, KeepEvents: true})
	}
	if len(keep) > 0 {
		fo.event("", fmt.Sprintf("restart: restored %d unfinished jobs, %d taken over meanwhile", len(keep), len(r.held)-len(keep)))
	}
	r.held, r.waiting, r.adopters = nil, nil, nil
	fo.mgr.restore(keep)
}

// nextReclaim is when reclaimDue next has work; ok is false for never.
func (fo *failover) nextReclaim() (time.Time, bool) {
	r := &fo.reclaim
	switch {
	case r.pending:
		return fo.settleAt(), true
	case len(r.held) > 0:
		return r.asked.Add(fo.cfg.QueryTimeout), true
	}
	return time.Time{}, false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Holds reports whether job id is held back after a restart.
func (m *Market) Holds(id string) bool {
	_, ok := m.fo.reclaim.held[id]
	return ok
}
