package market

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// auction is the manager's state for one task replica being placed.
type auction struct {
	id         AuctionID
	offer      TaskOffer
	opened     time.Time
	closeAt    time.Time
	broadcast  bool
	invited    map[NodeID]bool
	answered   map[NodeID]bool
	bids       []Bid
	nobids     []NoBid
	closed     bool
	ranked     []Bid     // remaining bids in award order, after close
	awardee    *Bid      // award sent, answer awaited
	awardBy    time.Time // award answer deadline
	nextAt     time.Time // when a new round may open (back-off)
	roundStart time.Time
}

// Submit accepts a validated job under the given ID and starts placing its
// ready tasks. The job spec must have passed spec validation.
func (m *Market) Submit(now time.Time, id string, js spec.Job) error {
	m.enter(now)
	defer m.leave()
	if _, dup := m.jobs[id]; dup {
		return fmt.Errorf("market: job %s already exists", id)
	}
	if err := js.Validate(); err != nil {
		return err
	}
	j := newJobRecord(id, js, m.cfg.Self, m.now)
	m.jobs[id] = &j
	m.jobOrder = append(m.jobOrder, id)
	m.active = append(m.active, id)
	m.touch(id)
	m.event(id, fmt.Sprintf("submitted %q with %d task replicas", js.Name, len(j.Tasks)))
	m.placeReady()
	return nil
}

// Restore reloads job records after a restart. Tasks this node was
// running died with it and are placed again; tasks elsewhere keep their
// state until their executor reports or is seen gone.
func (m *Market) Restore(now time.Time, jobs []JobRecord) {
	m.enter(now)
	defer m.leave()
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].Submitted.Before(jobs[j].Submitted) })
	var finished []*JobRecord
	defer func() { m.retireRestored(finished) }()
	for _, jr := range jobs {
		if _, dup := m.jobs[jr.ID]; dup {
			continue
		}
		j := jr.Clone()
		m.jobs[j.ID] = &j
		m.jobOrder = append(m.jobOrder, j.ID)
		if j.State.Terminal() {
			finished = append(finished, &j)
			continue
		}
		m.active = append(m.active, j.ID)
		j.Manager = m.cfg.Self
		for i := range j.Tasks {
			t := &j.Tasks[i]
			if (t.State == TaskAwarded || t.State == TaskRunning) && t.Node == m.cfg.Self {
				if ts, ok := j.Spec.Task(t.Key.Task); ok && ts.Gang && max(ts.Replicas, 1) > 1 {
					// A gang runs whole or not at all: its other replicas
					// are stopped and the gang is placed again.
					m.gangReplicaEnded(&j, t, TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: m.cfg.Self, State: TaskPreempted, ExitCode: -1, Reason: "node restarted"})
					continue
				}
				m.closeAttempt(&j, t, TaskFailed, -1, "node restarted")
				m.requeue(&j, t, m.now)
			} else if t.State == TaskAwarded || t.State == TaskRunning {
				t.LeaseUntil = m.now.Add(m.cfg.LeaseTimeout) // give executors time to report
			}
		}
		m.touch(j.ID)
	}
	m.placeReady()
}

// Cancel cancels a job: queued and running replicas are stopped, nothing
// new is placed. Cancelling a finished job is an error.
func (m *Market) Cancel(now time.Time, id, reason string) error {
	m.enter(now)
	defer m.leave()
	j, ok := m.jobs[id]
	if !ok {
		return fmt.Errorf("market: no job %s", id)
	}
	if j.State.Terminal() {
		return fmt.Errorf("market: job %s already %s", id, j.State)
	}
	m.endJob(j, JobCancelled, reason)
	return nil
}

// Job returns a copy of a job record this node manages.
func (m *Market) Job(id string) (JobRecord, bool) {
	j, ok := m.jobs[id]
	if !ok {
		return JobRecord{}, false
	}
	return j.Clone(), true
}

// JobCounts returns how many jobs this node manages in each state,
// without copying their records.
func (m *Market) JobCounts() map[JobState]int {
	out := make(map[JobState]int, len(JobStates))
	for _, j := range m.jobs {
		out[j.State]++
	}
	return out
}

// Jobs returns copies of all job records this node manages, oldest first.
func (m *Market) Jobs() []JobRecord {
	out := make([]JobRecord, 0, len(m.jobs))
	seen := make(map[string]bool, len(m.jobs))
	for _, id := range m.jobOrder {
		// jobOrder may still name forgotten jobs, and a job forgotten and
		// restored again twice.
		if j := m.jobs[id]; j != nil && !seen[id] {
			seen[id] = true
			out = append(out, j.Clone())
		}
	}
	return out
}

// Tick advances time: closes bid windows, times out awards, opens new
// rounds and retries whose back-off ended, and fails tasks nobody can run.
func (m *Market) Tick(now time.Time) {
	m.enter(now)
	defer m.leave()
	// Visit the auctions in the order of their keys' text (deterministic;
	// each key's text is built once, not per comparison).
	type named struct {
		k TaskKey
		s string
	}
	keys := make([]named, 0, len(m.auctions))
	for k := range m.auctions {
		keys = append(keys, named{k, k.String()})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].s < keys[j].s })
	for _, kn := range keys {
		k := kn.k
		a, ok := m.auctions[k]
		if !ok {
			continue
		}
		switch {
		case !a.closed && !m.now.Before(a.closeAt):
			m.windowEnd(a)
		case a.awardee != nil && !m.now.Before(a.awardBy):
			m.event(k.Job, fmt.Sprintf("%s: no answer to award from %s", k, a.awardee.Bidder))
			a.awardee = nil
			m.awardNext(a)
		case a.closed && a.awardee == nil && !a.nextAt.IsZero() && !m.now.Before(a.nextAt):
			m.newRound(a)
		}
	}
	m.gangTick()
	m.expireHolds()
	m.checkLeases()
	m.heartbeat()
	m.forgetFinished()
	m.repeatResults()
	m.maybeSteal()
	m.placeReady()
}

// placeReady opens an auction for every pending replica without one whose
// back-off has passed.
func (m *Market) placeReady() {
	for _, id := range m.activeJobs() {
		j := m.jobs[id]
		if j.State.Terminal() {
			continue
		}
		for i := range j.Tasks {
			t := &j.Tasks[i]
			if t.State != TaskPending || m.auctions[t.Key] != nil || m.now.Before(t.NotBefore) {
				continue
			}
			if ts, _ := j.Spec.Task(t.Key.Task); ts.Gang && ts.Replicas > 1 {
				if t.Key.Replica == 0 {
					m.placeGang(j, ts.Name, ts.Replicas)
				}
				continue
			}
			m.openAuction(j, t)
		}
	}
}

// offer describes a replica for a CFP. Estimate is the user's estimate
// or, when there is none, what the manager learned of this job type from
// completions on any node: a contractor that never ran the type then bids
// with the cluster's experience instead of a blind default.
func (m *Market) offer(j *JobRecord, t *TaskRecord) TaskOffer {
	ts, _ := j.Spec.Task(t.Key.Task)
	est := ts.Estimate
	if est <= 0 {
		if p := m.learned.Predict(j.Spec.Type, 0); p.Source == "history" {
			est = p.Runtime
		}
	}
	return TaskOffer{Key: t.Key, Type: j.Spec.Type, Priority: j.Spec.Priority, Deadline: j.Spec.Deadline,
		Estimate: est, Request: ts.Request}
}

func (m *Market) openAuction(j *JobRecord, t *TaskRecord) {
	delete(m.inherited, t.Key)
	t.Epoch++
	m.touch(j.ID)
	a := &auction{id: AuctionID{Key: t.Key, Epoch: t.Epoch}, offer: m.offer(j, t), opened: m.now}
	m.auctions[t.Key] = a
	m.sendCFPs(a, t)
}

// candidate is a peer ranked for a CFP.
type candidate struct {
	id    NodeID
	tried bool
	wait  time.Duration
	fit   float64
	tie   int64
}

// sendCFPs invites the best D·2^round candidates from the view (this node
// included), and broadcasts as well when fewer than D feasible candidates
// are known.
func (m *Market) sendCFPs(a *auction, t *TaskRecord) {
	a.invited, a.answered, a.bids, a.nobids = map[NodeID]bool{}, map[NodeID]bool{}, nil, nil
	a.closed, a.ranked, a.awardee, a.nextAt = false, nil, nil, time.Time{}
	a.closeAt, a.roundStart = m.now.Add(m.cfg.BidWindow), m.now
	tried := map[NodeID]bool{}
	for _, h := range t.History {
		if h.State == TaskFailed {
			tried[h.Node] = true
		}
	}
	cands := m.candidates(a.offer.Request, tried)
	n := m.cfg.D << min(a.id.Round, 10)
	if !a.offer.Request.GPU.Wants() {
		inviteOneGPUNode(cands, n)
	}
	if len(cands) < m.cfg.D {
		a.broadcast = true
		m.emit(Broadcast{Msg: CFP{Auction: a.id, Manager: m.cfg.Self, Task: a.offer}})
	}
	for i, c := range cands {
		if i >= n {
			break
		}
		a.invited[c.id] = true
		m.send(c.id, CFP{Auction: a.id, Manager: m.cfg.Self, Task: a.offer})
	}
}

// inviteOneGPUNode makes sure that the first n candidates for a task
// without GPUs include one node with free GPUs, when any fits now: the
// ranking puts nodes without free GPUs first, and a view of them that is
// out of date would otherwise cost a round. The GPU node wins only when
// none of the others can start the task now, since a node with GPUs
// scores half the match for it. (Ranking alone: on the synthetic mix,
// mean wait 0.04 → 0.50 s and bounded slowdown 1.001 → 1.015; with this,
// 0.05 s and 1.001, at the same GPU allocation on the Alibaba trace.)
func inviteOneGPUNode(cands []candidate, n int) {
	if n < 2 || len(cands) <= n || cands[n-1].fit > 0 {
		return
	}
	for i := n; i < len(cands); i++ {
		if c := cands[i]; c.fit > 0 && c.wait == 0 && !c.tried {
			cands[n-1], cands[i] = cands[i], cands[n-1]
			return
		}
	}
}

// candidates ranks the nodes of the view (this one included) that could
// ever hold req: nodes in tried last, then by expected wait (0 when the
// advertised free resources fit now), then by fit — for a GPU request
// the share of the node's GPUs it would leave free, for a request without
// GPUs the share of the node's GPUs that is free (least first) — then at
// random (seeded).
func (m *Market) candidates(req resource.Request, tried map[NodeID]bool) []candidate {
	var cands []candidate
	consider := func(id NodeID, site string, labels map[string]string, capv, free resource.Vector, wait time.Duration) {
		if couldHold(site, labels, capv, req) != "" {
			return
		}
		c := candidate{id: id, tried: tried[id], wait: wait, tie: m.rng.Int63()}
		if _, why := resource.Fit(free, req); why == "" {
			c.wait = 0
		} else if c.wait <= 0 {
			c.wait = time.Millisecond
		}
		if gpu := capv.GPUShare(); req.GPU.Wants() && gpu > 0 {
			want := req.GPU.Share
			if req.GPU.Count > 0 && (want == 0 || req.GPU.Count > 1) {
				want = int64(req.GPU.Count) * resource.WholeGPU
			}
			c.fit = float64(free.GPUShare()-want) / float64(gpu)
		} else if !req.GPU.Wants() && gpu > 0 {
			// Keep free GPUs' CPU for GPU work: the share of its GPUs
			// a node has free, 0 without GPUs or with all of them busy.
			c.fit = float64(free.GPUShare()) / float64(gpu)
		}
		cands = append(cands, c)
	}
	consider(m.cfg.Self, m.cfg.Site, m.cfg.Labels, m.c.capacity, m.c.free, m.PredictedWait(m.now))
	ids := make([]NodeID, 0, len(m.view))
	for id := range m.view {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := m.view[id]
		consider(p.ID, p.Site, p.Labels, p.Capacity, p.Free, p.PredictedWait)
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.tried != b.tried {
			return !a.tried
		}
		if a.wait != b.wait {
			return a.wait < b.wait
		}
		if a.fit != b.fit {
			return a.fit < b.fit
		}
		return a.tie < b.tie
	})
	return cands
}

// broadcastPending reports whether unknown nodes may still answer: a
// broadcast round whose window is open. A Last award is only made to the
// one and only bidder of a closed round: asking again would get the same
// answer, while with several bidders a fresh round finds the best.
func (a *auction) broadcastPending() bool { return a.broadcast && !a.closed }

func (m *Market) liveAuction(id AuctionID) *auction {
	a := m.auctions[id.Key]
	if a == nil || a.id != id {
		return nil
	}
	return a
}

func (m *Market) onBid(b Bid) {
	m.onAnswer(b.Auction, b.Bidder,
		func(g *gangAuction) { g.bids = append(g.bids, b) },
		func(a *auction) { a.bids = append(a.bids, b) })
}

func (m *Market) onNoBid(nb NoBid) {
	m.onAnswer(nb.Auction, nb.Bidder,
		func(g *gangAuction) { g.nobids = append(g.nobids, nb) },
		func(a *auction) { a.nobids = append(a.nobids, nb) })
}

// onAnswer records a bidder's first answer (a bid or a refusal) to the
// gang or single-task auction it names, if that round is still taking
// answers, and closes a single-task round once everyone invited answered.
func (m *Market) onAnswer(id AuctionID, bidder NodeID, gang func(*gangAuction), single func(*auction)) {
	if g := m.liveGang(id); g != nil {
		if !g.holding && g.nextAt.IsZero() && !g.answered[bidder] {
			g.answered[bidder] = true
			gang(g)
		}
		return
	}
	a := m.liveAuction(id)
	if a == nil || a.closed || a.answered[bidder] {
		return
	}
	a.answered[bidder] = true
	single(a)
	m.maybeClose(a)
}

// maybeClose closes the auction early once every invited node answered
// (never for a broadcast, whose audience is unknown).
func (m *Market) maybeClose(a *auction) {
	if a.broadcast {
		return
	}
	for id := range a.invited {
		if !a.answered[id] {
			return
		}
	}
	m.closeAuction(a)
}

// rank orders bids for award. Bids from nodes the task failed on come
// last. If some bid starts within PreemptWait without evicting anything,
// such bids come first, then evicting ones. Within a class, bids whose
// predicted finish is within tolerance (max(BidSlack, R/4)) of the
// class's earliest finish come first — the score chooses among bids that
// are about as fast, it cannot trade a whole wave of waiting for a better
// fit — then highest score, earliest finish, lowest node ID.
func (m *Market) rank(a *auction, t *TaskRecord) []Bid {
	tried := map[NodeID]bool{}
	for _, h := range t.History {
		if h.State == TaskFailed {
			tried[h.Node] = true
		}
	}
	soon := false
	for _, b := range a.bids {
		if !b.Preempt && !b.Start.After(m.now.Add(m.cfg.PreemptWait)) {
			soon = true
		}
	}
	class := func(b Bid) int {
		c := 0
		if tried[b.Bidder] {
			c += 8
		}
		if soon && (b.Preempt || b.Start.After(m.now.Add(m.cfg.PreemptWait))) {
			c += 4
		}
		if !soon && !b.Preempt {
			c += 2
		}
		return c
	}
	best := map[int]time.Time{}
	for _, b := range a.bids {
		c := class(b)
		if f, ok := best[c]; !ok || b.Finish.Before(f) {
			best[c] = b.Finish
		}
	}
	key := func(b Bid) int {
		c := class(b)
		tol := max(m.cfg.BidSlack, b.Runtime/4)
		if b.Finish.After(best[c].Add(tol)) {
			c++
		}
		return c
	}
	out := append([]Bid(nil), a.bids...)
	sort.SliceStable(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if cx, cy := key(x), key(y); cx != cy {
			return cx < cy
		}
		if x.Score != y.Score {
			return x.Score > y.Score
		}
		if !x.Finish.Equal(y.Finish) {
			return x.Finish.Before(y.Finish)
		}
		return x.Bidder < y.Bidder
	})
	return out
}

// windowEnd closes an auction whose bid window ran out, unless it is
// worth waiting longer, up to MaxBidWindow: invited nodes are still silent
// and either fewer than two have answered or no bid in hand starts within
// BidSlack without evicting. On a loaded node a late bid from an idle peer
// beats an early one from a busy peer — and this node's own bid, which
// arrives instantly, must not win by default.
func (m *Market) windowEnd(a *auction) {
	if !a.broadcast && m.now.Sub(a.roundStart) < m.cfg.MaxBidWindow && len(a.answered) < len(a.invited) {
		good := false
		for _, b := range a.bids {
			if !b.Preempt && !b.Start.After(m.now.Add(m.cfg.BidSlack)) {
				good = true
			}
		}
		if !good || len(a.answered) < min(2, len(a.invited)) {
			a.closeAt = m.now.Add(m.cfg.BidWindow / 2)
			return
		}
	}
	m.closeAuction(a)
}

func (m *Market) closeAuction(a *auction) {
	a.closed = true
	j, t := m.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		delete(m.auctions, a.id.Key)
		return
	}
	if len(a.bids) == 0 {
		if m.now.Sub(t.Ready) >= m.cfg.SchedulingTimeout {
			m.failUnplaceable(j, t, a)
			return
		}
		back := m.cfg.RoundBackoff << min(a.id.Round, 5)
		a.nextAt = m.now.Add(min(back, 2*time.Second))
		return
	}
	a.ranked = m.rank(a, t)
	if len(a.ranked) > 0 {
		b := a.ranked[0]
		m.event(a.id.Key.Job, fmt.Sprintf("%s: round %d closed with %d bids, %d refusals of %d invited; best %s start %s score %.3f", a.id.Key, a.id.Round, len(a.bids), len(a.nobids), len(a.invited), b.Bidder, startText(b.Start.Sub(m.now)), b.Score))
		m.emit(RoundClosed{Auction: a.id, Opened: a.roundStart, Closed: m.now, Bids: len(a.bids), Invited: len(a.invited)})
	}
	m.awardNext(a)
}

// startText says when a bid's start lies from now: "now" for a start
// that is due (a bid made during the window may name a start already
// passed), else "+" and the wait.
func startText(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return "+" + d.Round(time.Millisecond).String()
}

// awardNext sends the award to the best remaining bid, or opens a new
// round when every bidder declined.
func (m *Market) awardNext(a *auction) {
	j, t := m.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		delete(m.auctions, a.id.Key)
		return
	}
	if len(a.ranked) == 0 {
		a.nextAt = m.now.Add(m.cfg.RoundBackoff)
		return
	}
	b := a.ranked[0]
	a.ranked = a.ranked[1:]
	a.awardee, a.awardBy = &b, m.now.Add(m.cfg.AwardTimeout)
	ts, _ := j.Spec.Task(t.Key.Task)
	spec := TaskSpec{TaskOffer: a.offer, Command: ts.Command, Env: ts.Env, Timeout: ts.Timeout,
		CheckpointInterval: ts.CheckpointInterval, Epoch: t.Epoch, Attempt: t.Attempts + 1}
	m.send(b.Bidder, Award{Auction: a.id, Manager: m.cfg.Self, Task: spec, Bid: b, Last: len(a.bids) == 1 && len(a.ranked) == 0 && !a.broadcastPending()})
}

func (m *Market) newRound(a *auction) {
	_, t := m.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		delete(m.auctions, a.id.Key)
		return
	}
	a.id.Round++
	m.sendCFPs(a, t)
}

func (m *Market) onAwardReply(r AwardReply) {
	a := m.liveAuction(r.Auction)
	if a == nil || a.awardee == nil || a.awardee.Bidder != r.Bidder {
		return
	}
	j, t := m.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		if r.Accept { // the task moved on meanwhile: withdraw
			m.send(r.Bidder, CancelTask{Key: a.id.Key, Epoch: a.id.Epoch, Reason: "award withdrawn"})
		}
		delete(m.auctions, a.id.Key)
		return
	}
	if !r.Accept {
		m.event(a.id.Key.Job, fmt.Sprintf("%s: %s declined the award: %s", a.id.Key, r.Bidder, r.Reason))
		a.awardee = nil
		m.awardNext(a)
		return
	}
	delete(m.auctions, a.id.Key)
	t.State, t.Node, t.LeaseUntil = TaskAwarded, r.Bidder, m.now.Add(m.cfg.LeaseTimeout)
	t.Attempts++
	t.History = append(t.History, AttemptRecord{Attempt: t.Attempts, Epoch: t.Epoch, Node: r.Bidder, State: TaskAwarded, Awarded: m.now})
	if j.State == JobPending {
		j.State = JobRunning
	}
	m.touch(j.ID)
	m.event(j.ID, fmt.Sprintf("%s: awarded to %s (attempt %d, epoch %d)", t.Key, r.Bidder, t.Attempts, t.Epoch))
}

func (m *Market) find(k TaskKey) (*JobRecord, *TaskRecord) {
	j, ok := m.jobs[k.Job]
	if !ok {
		return nil, nil
	}
	return j, m.taskOf(j, k)
}

// taskIndexFrom is the job size from which taskOf keeps an index of the
// job's records; below it a scan is as fast.
const taskIndexFrom = 32

// taskOf returns replica k's record in j. A job's records are laid out a
// task after another, each task's replicas in order (newJobRecord), so for
// large jobs m.firstRecord caches where each task's first replica is; a
// record found elsewhere (a layout the cache does not know) is scanned for.
func (m *Market) taskOf(j *JobRecord, k TaskKey) *TaskRecord {
	if len(j.Tasks) < taskIndexFrom {
		return j.task(k)
	}
	first := m.firstRecord[j.ID]
	if first == nil {
		first = make(map[string]int, len(j.Spec.Tasks))
		for i := len(j.Tasks) - 1; i >= 0; i-- {
			first[j.Tasks[i].Key.Task] = i
		}
		m.firstRecord[j.ID] = first
	}
	if i, ok := first[k.Task]; ok && k.Replica >= 0 && i+k.Replica < len(j.Tasks) && j.Tasks[i+k.Replica].Key == k {
		return &j.Tasks[i+k.Replica]
	}
	return j.task(k)
}

// onTaskStatus applies an executor's report, rejecting stale epochs.
func (m *Market) onTaskStatus(s TaskStatus) {
	j, t := m.find(s.Key)
	if t == nil {
		return // not this node's job (any more): no ack, the report may find its manager yet
	}
	if s.AckWanted {
		// Whatever becomes of the report — applied, a repeat, stale — a
		// repeat would be judged the same way. The ack leaves after this
		// turn's records are committed, as every message does.
		defer m.send(s.Node, ResultAck{Key: s.Key, Epoch: s.Epoch, Attempt: s.Attempt})
	}
	if s.Epoch == t.Epoch && s.Node == lastNode(t) && s.State == t.State && t.State.Terminal() {
		return // a repeated final report: already applied
	}
	if s.Epoch == t.Epoch && j.State.Terminal() && s.State.Terminal() {
		return // the job ended; this replica's end changes nothing
	}
	if m.fromPreviousManager(j, t, s) {
		m.catchUp(j, t, s)
	}
	if s.Epoch != t.Epoch || s.Node != t.Node || t.State.Terminal() || j.State.Terminal() {
		live := s.State == TaskRunning || s.State == TaskAwarded
		if live && (s.Epoch < t.Epoch || j.State.Terminal() || t.State.Terminal() || s.Node != t.Node) {
			m.send(s.Node, CancelTask{Key: s.Key, Epoch: s.Epoch, Reason: "stale epoch"})
		}
		if s.Epoch <= t.Epoch {
			m.event(j.ID, fmt.Sprintf("%s: stale report %q from %s epoch %d rejected (current epoch %d)", s.Key, s.State, s.Node, s.Epoch, t.Epoch))
		}
		return
	}
	// Lease renewals: a report of the state the manager already has.
	if (s.State == TaskRunning && t.State == TaskRunning) || (s.State == TaskAwarded && (t.State == TaskAwarded || t.State == TaskRunning)) {
		t.LeaseUntil = m.now.Add(m.cfg.LeaseTimeout)
		return
	}
	t.LeaseUntil = m.now.Add(m.cfg.LeaseTimeout)
	m.touch(j.ID)
	switch s.State {
	case TaskRunning:
		t.State, t.Started = TaskRunning, s.Time
		if h := lastAttempt(t); h != nil {
			h.State, h.Started = TaskRunning, s.Time
		}
		j.State = JobRunning
		m.event(j.ID, fmt.Sprintf("%s: running on %s", t.Key, s.Node))
	case TaskSucceeded:
		if s.Runtime > 0 {
			m.learned.Observe(j.Spec.Type, s.Runtime)
		}
		m.closeAttempt(j, t, TaskSucceeded, s.ExitCode, s.Reason)
		t.State, t.ExitCode, t.Reason, t.Finished = TaskSucceeded, s.ExitCode, "", m.now
		m.event(j.ID, fmt.Sprintf("%s: succeeded on %s", t.Key, s.Node))
		m.release(j)
	case TaskFailed, TaskPreempted, TaskCancelled:
		if ts, _ := j.Spec.Task(t.Key.Task); ts.Gang && ts.Replicas > 1 {
			m.gangReplicaEnded(j, t, s)
			break
		}
		if s.State != TaskFailed {
			m.closeAttempt(j, t, s.State, s.ExitCode, s.Reason)
			m.requeue(j, t, m.now)
			m.event(j.ID, fmt.Sprintf("%s: %s on %s (%s); placing again", t.Key, s.State, s.Node, s.Reason))
			break
		}
		m.closeAttempt(j, t, TaskFailed, s.ExitCode, s.Reason)
		t.Failures++
		t.ExitCode, t.Reason = s.ExitCode, s.Reason
		ts, _ := j.Spec.Task(t.Key.Task)
		if t.Failures > ts.Retries {
			t.State, t.Finished = TaskFailed, m.now
			reason := fmt.Sprintf("task %s failed after %d attempts: exit code %d: %s", t.Key.Task, t.Attempts, s.ExitCode, s.Reason)
			if t.Key.Replica > 0 || ts.Replicas > 1 {
				reason = fmt.Sprintf("task %s replica %d failed after %d attempts: exit code %d: %s", t.Key.Task, t.Key.Replica, t.Attempts, s.ExitCode, s.Reason)
			}
			m.event(j.ID, reason)
			m.endJob(j, JobFailed, reason)
			return
		}
		back := min(m.cfg.RetryBase<<min(t.Failures-1, 20), m.cfg.RetryMax)
		m.requeue(j, t, m.now.Add(back))
		m.event(j.ID, fmt.Sprintf("%s: failed on %s (exit %d: %s); retry %d/%d in %v", t.Key, s.Node, s.ExitCode, s.Reason, t.Failures, ts.Retries, back))
	}
	m.placeReady()
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

func (m *Market) closeAttempt(j *JobRecord, t *TaskRecord, st TaskState, code int, reason string) {
	if h := lastAttempt(t); h != nil && h.Finished.IsZero() {
		h.State, h.ExitCode, h.Reason, h.Finished = st, code, reason, m.now
	}
	m.touch(j.ID)
}

// requeue makes a replica pending again, to be placed from notBefore on.
func (m *Market) requeue(j *JobRecord, t *TaskRecord, notBefore time.Time) {
	t.State, t.Node, t.NotBefore, t.Ready = TaskPending, "", notBefore, notBefore
	delete(m.auctions, t.Key)
	m.touch(j.ID)
}

// release marks replicas whose dependencies all succeeded as pending, and
// finishes the job when every replica succeeded.
func (m *Market) release(j *JobRecord) {
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
		m.endJob(j, JobSucceeded, "")
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
			t.State, t.Ready = TaskPending, m.now
		}
	}
}

// endJob moves a job to a terminal state, stopping whatever still runs.
func (m *Market) endJob(j *JobRecord, st JobState, reason string) {
	j.State, j.Reason, j.Finished = st, reason, m.now
	for _, ts := range j.Spec.Tasks {
		if g := m.gangs[gangID(j.ID, ts.Name)]; g != nil {
			if g.holding {
				for r, n := range g.holders {
					m.send(n, Release{Key: TaskKey{Job: g.job, Task: g.task, Replica: r}, Epoch: g.epoch})
				}
			}
			delete(m.gangs, gangID(j.ID, ts.Name))
		}
	}
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.State.Terminal() {
			continue
		}
		if t.State == TaskAwarded || t.State == TaskRunning {
			m.send(t.Node, CancelTask{Key: t.Key, Epoch: t.Epoch, Reason: fmt.Sprintf("job %s", st)})
			m.closeAttempt(j, t, TaskCancelled, -1, "job "+string(st))
		}
		delete(m.auctions, t.Key)
		delete(m.inherited, t.Key)
		t.State, t.Finished = TaskCancelled, m.now
	}
	m.touch(j.ID)
	m.event(j.ID, fmt.Sprintf("job %s%s", st, suffix(reason)))
}

func suffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

// failUnplaceable fails a replica nobody bid for within the scheduling
// timeout, naming the unmet requirement and the closest peer.
func (m *Market) failUnplaceable(j *JobRecord, t *TaskRecord, a *auction) {
	delete(m.auctions, t.Key)
	reason := m.unplaceableReason(a)
	t.State, t.Reason, t.ExitCode, t.Finished = TaskFailed, reason, -1, m.now
	full := fmt.Sprintf("task %s cannot be scheduled: %s", t.Key.Task, reason)
	m.event(j.ID, full)
	m.endJob(j, JobFailed, full)
}

// unplaceableReason explains why no node bid: from the refusals received
// and the advert view, the requirement that the closest node misses.
func (m *Market) unplaceableReason(a *auction) string {
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
		if p := m.view[nb.Bidder]; p != nil {
			capv = p.Capacity
		}
		add(nb.Bidder, nb.Reason, capv)
	}
	check := func(id NodeID, site string, labels map[string]string, capv resource.Vector) {
		if seen[id] {
			return
		}
		why := couldHold(site, labels, capv, a.offer.Request)
		if why == "" {
			why = "did not bid"
		}
		add(id, why, capv)
	}
	check(m.cfg.Self, m.cfg.Site, m.cfg.Labels, m.c.capacity)
	for _, p := range m.view {
		check(p.ID, p.Site, p.Labels, p.Capacity)
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
	for i, p := range []string{"site", "label", "cpu", "memory", "disk", "device", "gpu: none", "gpu model", "gpu memory", "gpu count", "gpu share", "did not bid"} {
		if strings.HasPrefix(reason, p) {
			return i
		}
	}
	return 0
}

// checkLeases places again, with a new epoch, every replica whose
// executor has not reported within the lease timeout. The old executor's
// later reports carry the old epoch and are rejected, so a replica that
// was partitioned away cannot succeed twice.
func (m *Market) checkLeases() {
	for _, id := range m.activeJobs() {
		j := m.jobs[id]
		if j.State.Terminal() {
			continue
		}
		for i := range j.Tasks {
			t := &j.Tasks[i]
			if (t.State != TaskAwarded && t.State != TaskRunning) || t.LeaseUntil.IsZero() || m.now.Before(t.LeaseUntil) {
				continue
			}
			why := fmt.Sprintf("lease lapsed: no report from %s for %v", t.Node, m.cfg.LeaseTimeout)
			m.event(j.ID, fmt.Sprintf("%s: %s; placing again with a new epoch", t.Key, why))
			if ts, _ := j.Spec.Task(t.Key.Task); ts.Gang && ts.Replicas > 1 {
				m.gangReplicaEnded(j, t, TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: t.Node, State: TaskPreempted, ExitCode: -1, Reason: why})
				continue
			}
			m.closeAttempt(j, t, TaskFailed, -1, why)
			m.requeue(j, t, m.now)
		}
	}
}

// activeJobs returns the IDs of the jobs not yet finished, in submission
// order, dropping finished ones from the index as it goes: the periodic
// work of a manager costs what is live, not everything it ever ran.
func (m *Market) activeJobs() []string {
	keep := m.active[:0]
	for _, id := range m.active {
		if j := m.jobs[id]; j != nil && !j.State.Terminal() {
			keep = append(keep, id)
		}
	}
	m.active = keep
	return keep
}
