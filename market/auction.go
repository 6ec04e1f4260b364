package market

import (
	"fmt"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// auction is the manager's state for one task replica being placed.
type auction struct {
	round
	id         AuctionID
	offer      TaskOffer
	broadcast  bool
	closed     bool
	ranked     []Bid     // remaining bids in award order, after close
	awardee    *Bid      // award sent, answer awaited
	awardBy    time.Time // award answer deadline
	unanswered bool      // the awardee said nothing by AwardTimeout (awardUnanswered)
	nextAt     time.Time // when a new round may open (back-off)
	parks      int       // rounds since it found no node for ParkAfter (parkBackoff)
	direct     bool      // a stolen replica, awarded to the thief without a bid
}

// placeReady opens an auction for every pending replica without one whose
// back-off has passed: those of the jobs whose timers are due.
func (au *auctioneer) placeReady() {
	var lacking []inputLack
	var usage map[string]*UserUsage // the limited users' (userlimits.go), made on first need
	var throttles map[string]int    // array throttles (arrayThrottle), for this pass
	var inFlight map[string]int     // an array task's replicas placed or being placed, counted once a pass
	for j, t := range tasksOf(au.dueJobs()) {
		if t.State != TaskPending || au.auctions[t.Key] != nil || au.now.Before(t.NotBefore) {
			continue
		}
		if why := au.unresolved(j, t); why != "" {
			lacking = append(lacking, inputLack{j, t, why})
			continue
		}
		_, limited := au.limitedUser(j)
		if limited {
			if usage == nil {
				usage = au.limitedUsage()
			}
			if au.overUserLimit(j, t, usage) != "" {
				// Its user's network-wide running limit: looked at again in a
				// while (the reason shows in Job's Waiting).
				t.NotBefore = au.now.Add(userLimitRetry)
				if settled := j.Submitted.Add(demandSettles(au.cfg)); settled.After(t.NotBefore) {
					t.NotBefore = settled
				}
				au.dl.retimeJob(j.ID)
				continue
			}
		}
		if limit := au.arrayThrottle(j, t.Key.Task, &throttles); limit > 0 {
			k := j.ID + "/" + t.Key.Task
			if inFlight == nil {
				inFlight = map[string]int{}
			}
			n, ok := inFlight[k]
			if !ok {
				n = au.arrayInFlight(j, t.Key.Task)
			}
			if n >= limit {
				inFlight[k] = n
				continue // placed when one of them ends (the job is due then)
			}
			inFlight[k] = n + 1
		}
		switch {
		case !j.isGang(t.Key.Task):
			au.openAuction(j, t)
		case t.Key.Replica == 0:
			au.gang.placeGang(j, t.Key.Task)
		default:
			continue
		}
		if limited { // what this turn places counts for its next ones
			usage[j.Owner] = au.userUsage(j.Owner)
		}
	}
	for _, l := range lacking {
		au.failLacking(l)
	}
}

// arrayThrottle is the most replicas of j's task that may be placed or
// being placed at once, 0 for no bound (spec.Array's %K); cache, when not
// nil, keeps the answers of one pass.
func (au *auctioneer) arrayThrottle(j *JobRecord, task string, cache *map[string]int) int {
	k := j.ID + "/" + task
	if cache != nil {
		if n, ok := (*cache)[k]; ok {
			return n
		}
	}
	n := 0
	if ts, ok := j.Spec.Task(task); ok {
		n = ts.ArrayThrottle()
	}
	if cache != nil {
		if *cache == nil {
			*cache = map[string]int{}
		}
		(*cache)[k] = n
	}
	return n
}

// arrayInFlight counts j's replicas of task awarded, running, or pending
// with an auction open: what an array's throttle bounds.
func (au *auctioneer) arrayInFlight(j *JobRecord, task string) int {
	n := 0
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.Key.Task != task {
			continue
		}
		switch {
		case t.State == TaskAwarded, t.State == TaskRunning:
			n++
		case t.State == TaskPending && au.auctions[t.Key] != nil:
			n++
		}
	}
	return n
}

// offer describes a replica for a CFP. Estimate is the user's estimate
// or, when there is none, what the manager learned of this job type from
// completions on any node: a contractor that never ran the type then bids
// with the cluster's experience instead of a blind default.
func (au *auctioneer) offer(j *JobRecord, t *TaskRecord) TaskOffer {
	ts, _ := j.Spec.Task(t.Key.Task)
	est := ts.Estimate
	if est <= 0 {
		if p := au.learned.Predict(j.Spec.Type, 0); p.Source == "history" {
			est = p.Runtime
		}
	}
	return TaskOffer{Key: t.Key, Type: j.Spec.Type, Priority: j.Spec.Priority, Deadline: j.Spec.Deadline,
		Estimate: est, Request: ts.Request, Inputs: au.inputSizes(j, ts)}
}

func (au *auctioneer) openAuction(j *JobRecord, t *TaskRecord) {
	delete(au.inherited, t.Key)
	t.Epoch = au.nextEpoch(j, t.Epoch)
	au.touch(j.ID)
	a := &auction{id: AuctionID{Key: t.Key, Epoch: t.Epoch}, offer: au.offer(j, t)}
	au.putAuction(a)
	au.sendCFPs(a, t)
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
func (au *auctioneer) sendCFPs(a *auction, t *TaskRecord) {
	a.open(au.now, au.cfg.BidWindow)
	a.closed, a.ranked, a.awardee, a.nextAt, a.direct = false, nil, nil, time.Time{}, false
	tried := map[NodeID]bool{}
	for _, h := range t.History {
		if h.State == TaskFailed {
			tried[h.Node] = true
		}
	}
	cands := au.candidates(a.offer, tried)
	n := au.cfg.D << min(a.id.Round, 10)
	if !a.offer.Request.GPU.Wants() {
		inviteOneGPUNode(cands, n)
	}
	cfp := CFP{Auction: a.id, Manager: au.cfg.Self, Task: a.offer}
	// A lone node (no peer in its view) asks only itself: the round
	// closes as soon as its own answer is in, with no window to wait out.
	if len(cands) < au.cfg.D && len(au.view) > 0 {
		a.broadcast = true
		au.emit(Broadcast{Msg: au.tix.withTicket(cfp)})
	}
	au.call(&a.round, cfp, cands, n)
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
func (au *auctioneer) candidates(o TaskOffer, tried map[NodeID]bool) []candidate {
	req, inputs := o.Request, o.Inputs
	au.gang.refreshHead()
	var cands []candidate
	consider := func(id NodeID, site string, labels map[string]string, lim resource.Enforcement, capv, free resource.Vector, wait time.Duration, holds func(string) bool) {
		if couldHold(site, labels, lim, capv, req) != "" {
			return
		}
		c := candidate{id: id, tried: tried[id], wait: wait, tie: au.rng.Int63()}
		if _, why := resource.Fit(free, req); why == "" {
			c.wait = 0
		} else if c.wait <= 0 {
			c.wait = time.Millisecond
		}
		// Data it lacks has to move first (locality).
		c.wait += au.transferTime(lacking(inputs, holds))
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
	consider(au.cfg.Self, au.cfg.Site, au.cfg.Labels, au.cfg.Limits, au.con.capacity, au.gang.freeFor(o, au.con.free, au.gang.reserved()), au.gang.predictedWait(au.now), au.cfg.Holds)
	ids := make([]NodeID, 0, len(au.view))
	for id := range au.view {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := au.view[id]
		consider(p.ID, p.Site, p.Labels, p.Limits, p.Capacity, au.gang.freeFor(o, p.Free, p.Reserved), p.PredictedWait, p.holds)
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

func (au *auctioneer) liveAuction(id AuctionID) *auction {
	a := au.auctions[id.Key]
	if a == nil || a.id != id {
		return nil
	}
	au.dl.retimeAuction(id.Key) // the caller may change it
	return a
}

func (au *auctioneer) onBid(b Bid) { au.onAnswer(b.Auction, b.Bidder, &b, nil) }

func (au *auctioneer) onNoBid(nb NoBid) {
	au.onNoBidTicket(nb)
	au.onAnswer(nb.Auction, nb.Bidder, nil, &nb)
}

// onAnswer records a bidder's first answer (a bid, or with b nil the
// refusal nb) to the gang or single-task auction it names, if that round
// is still taking answers, and closes a single-task round once everyone
// invited answered.
func (au *auctioneer) onAnswer(id AuctionID, bidder NodeID, b *Bid, nb *NoBid) {
	if g := au.gang.liveGang(id); g != nil {
		if !g.holding && g.nextAt.IsZero() {
			g.take(bidder, b, nb)
		}
		return
	}
	if a := au.liveAuction(id); a != nil && !a.closed && a.take(bidder, b, nb) {
		au.maybeClose(a)
	}
}

// maybeClose closes the auction early once every invited node answered
// (never for a broadcast, whose audience is unknown).
func (au *auctioneer) maybeClose(a *auction) {
	if !a.broadcast && !a.silent() {
		au.closeAuction(a)
	}
}

// rank orders bids for award. Bids from nodes the task failed on come
// last. If some bid starts within PreemptWait without evicting anything,
// such bids come first, then evicting ones. Within a class, bids whose
// predicted finish is within tolerance (max(BidSlack, R/4)) of the
// class's earliest finish come first — the score chooses among bids that
// are about as fast, it cannot trade a whole wave of waiting for a better
// fit — then highest score, earliest finish, lowest node ID.
func (au *auctioneer) rank(a *auction, t *TaskRecord) []Bid {
	tried := map[NodeID]bool{}
	for _, h := range t.History {
		if h.State == TaskFailed {
			tried[h.Node] = true
		}
	}
	soon := false
	for _, b := range a.bids {
		if !b.Preempt && !b.Start.After(au.now.Add(au.cfg.PreemptWait)) {
			soon = true
		}
	}
	class := func(b Bid) int {
		c := 0
		if tried[b.Bidder] {
			c += 8
		}
		if soon && (b.Preempt || b.Start.After(au.now.Add(au.cfg.PreemptWait))) {
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
		tol := max(au.cfg.BidSlack, b.Runtime/4)
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
func (au *auctioneer) windowEnd(a *auction) {
	if !a.broadcast && a.mayWait(au.now, au.cfg.MaxBidWindow) {
		good := false
		for _, b := range a.bids {
			if !b.Preempt && !b.Start.After(au.now.Add(au.cfg.BidSlack)) {
				good = true
			}
		}
		if !good || len(a.answered) < min(2, len(a.invited)) {
			a.closeAt = au.now.Add(au.cfg.BidWindow / 2)
			return
		}
	}
	au.closeAuction(a)
}

func (au *auctioneer) closeAuction(a *auction) {
	a.closed = true
	j, t := au.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		au.dropAuction(a.id.Key)
		return
	}
	if len(a.bids) == 0 {
		waited := au.now.Sub(t.Ready)
		timeout := au.pendingTimeout(j)
		if timeout > 0 && waited >= timeout {
			au.mgr.failUnplaceable(j, t, a, timeout)
			return
		}
		back := min(au.cfg.RoundBackoff<<min(a.id.Round, 5), 2*time.Second)
		if waited >= ParkAfter {
			// Nothing can hold it now: a round now and then, and one as
			// soon as a node that might joins (wakeParked).
			back = parkBackoff(a.parks)
			a.parks++
			if au.parked == nil {
				au.parked = map[TaskKey]struct{}{}
			}
			au.parked[a.id.Key] = struct{}{}
		}
		a.nextAt = au.now.Add(back)
		if timeout > 0 && a.nextAt.After(t.Ready.Add(timeout)) {
			a.nextAt = t.Ready.Add(timeout)
		}
		return
	}
	a.ranked = au.rank(a, t)
	if len(a.ranked) > 0 {
		b := a.ranked[0]
		au.event(a.id.Key.Job, fmt.Sprintf("%s: round %d closed with %d bids, %d refusals of %d invited; best %s start %s score %.3f", a.id.Key, a.id.Round, len(a.bids), len(a.nobids), len(a.invited), b.Bidder, startText(b.Start.Sub(au.now)), b.Score))
		au.emit(RoundClosed{Auction: a.id, Opened: a.start, Closed: au.now, Bids: len(a.bids), Invited: len(a.invited)})
	}
	au.awardNext(a)
}

// ParkAfter is how long a replica may find no bidder before its rounds
// slow down, ParkEvery apart at first, twice as far each time, up to
// ParkMax: it waits for a node that could hold it (docs/jobspec.md,
// pending_timeout), and what brings one — a peer that joins, restarts or
// is undrained — opens a round at once (wakeParked). Asking the whole
// network every 2 s meanwhile cost every node a call per waiting replica:
// on the synthetic mix's 30 nodes, 14× a run's messages in its first 20 h.
const (
	ParkAfter = 10 * time.Second
	ParkEvery = 30 * time.Second
	ParkMax   = time.Hour
)

// parkBackoff is the pause before a parked replica's next round, after
// parks of them.
func parkBackoff(parks int) time.Duration {
	return min(ParkEvery<<min(parks, 8), ParkMax)
}

// pendingTimeout is how long j's replicas may find no bidder before it
// fails: its spec's pending_timeout, else the node's SchedulingTimeout;
// zero waits for ever.
func (sh *shared) pendingTimeout(j *JobRecord) time.Duration {
	if j.Spec.PendingTimeout > 0 {
		return j.Spec.PendingTimeout
	}
	return sh.cfg.SchedulingTimeout
}

// wakeParked opens a round at once for every parked auction: a peer
// joined or restarted, and may hold what nothing could.
func (sh *shared) wakeParked() {
	for k := range sh.parked {
		if a := sh.auctions[k]; a != nil && a.closed && a.awardee == nil && !a.nextAt.IsZero() {
			a.nextAt = sh.now
			sh.dl.retimeAuction(k)
		}
	}
	clear(sh.parked)
	for id := range sh.parkedGangs {
		if g := sh.gangs[id]; g != nil && !g.holding && !g.nextAt.IsZero() {
			g.nextAt = sh.now
			sh.dl.retimeGang(id)
		}
	}
	clear(sh.parkedGangs)
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
func (au *auctioneer) awardNext(a *auction) {
	j, t := au.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		au.dropAuction(a.id.Key)
		return
	}
	if len(a.ranked) == 0 {
		a.nextAt = au.now.Add(au.cfg.RoundBackoff)
		return
	}
	b := a.ranked[0]
	a.ranked = a.ranked[1:]
	a.awardee, a.awardBy, a.unanswered = &b, au.now.Add(au.cfg.AwardTimeout), false
	ts, _ := j.Spec.Task(t.Key.Task)
	spec := signedTask(&j.Spec, ts, j.Owner, false).withDecisions(TaskSpec{TaskOffer: a.offer,
		Epoch: t.Epoch, Attempt: t.Attempts + 1, Previous: previous(t), Inputs: au.inputRefs(j, ts)}).withArrayIndex(ts)
	au.send(b.Bidder, Award{Auction: a.id, Manager: au.cfg.Self, Task: spec, Bid: b, Last: len(a.bids) == 1 && len(a.ranked) == 0 && !a.broadcastPending(),
		Ticket: au.tix.forPeer(j, b.Bidder), Direct: a.direct})
}

// previous lists a replica's earlier placements, oldest first, at most
// the wire's limit (the newest kept).
func previous(t *TaskRecord) []Placement {
	var out []Placement
	for _, h := range t.History {
		if h.Node != "" && h.Epoch < t.Epoch {
			out = append(out, Placement{Epoch: h.Epoch, Node: h.Node})
		}
	}
	if len(out) > maxPrevious {
		out = out[len(out)-maxPrevious:]
	}
	return out
}

// maxPrevious bounds TaskSpec.Previous (the wire's limit).
const maxPrevious = 64

// ticketLost forgets that a peer holds a job's ticket when it says it
// does not (its cache evicted it).
func (au *auctioneer) onNoBidTicket(nb NoBid) {
	if nb.NeedTicket {
		au.tix.lost(nb.Auction.Key.Job, nb.Bidder)
	}
}

func (au *auctioneer) newRound(a *auction) {
	_, t := au.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		au.dropAuction(a.id.Key)
		return
	}
	a.id.Round++
	au.sendCFPs(a, t)
}

// awardUnanswered handles an award with no answer by its deadline. The
// award or its answer may be lost or late, and an awardee that accepted
// runs the replica at once: awarding the next bid now could start the
// attempt twice (the fault campaign found it: market/cluster
// TestFaultCampaign). So the manager first waits until a running
// awardee's lease renewals would have reached it — LeaseTimeout after
// the award — taking any word of it as its answer (onTaskStatus), and
// only then places the replica again, in a new auction with the next
// epoch, which makes a start of this one that surfaces later stale.
func (au *auctioneer) awardUnanswered(a *auction) {
	k, who := a.id.Key, a.awardee.Bidder
	if !a.unanswered {
		a.unanswered = true
		a.awardBy = a.awardBy.Add(max(au.cfg.LeaseTimeout-au.cfg.AwardTimeout, 0))
		au.event(k.Job, fmt.Sprintf("%s: no answer to award from %s yet; waiting for word of it until %s", k, who, a.awardBy.Format("15:04:05.000")))
		return
	}
	au.event(k.Job, fmt.Sprintf("%s: no answer to award from %s; placing again with a new epoch", k, who))
	au.send(who, CancelTask{Key: k, Epoch: a.id.Epoch, Reason: "award withdrawn: no answer"})
	au.dropAuction(k) // placeReady opens the next auction, with the next epoch
}

func (au *auctioneer) onAwardReply(r AwardReply) {
	a := au.liveAuction(r.Auction)
	if a == nil && r.Accept {
		if j, t := au.find(r.Auction.Key); t == nil || t.State.Terminal() || j.State.Terminal() {
			// The job ended or was given up while the award was out, and
			// the withdrawal sent then may have come first (the soak's
			// seed 3884): the awardee would run it for no manager.
			au.send(r.Bidder, CancelTask{Key: r.Auction.Key, Epoch: r.Auction.Epoch, Reason: "award withdrawn: the job is not managed here"})
		}
		return
	}
	if a == nil || a.awardee == nil || a.awardee.Bidder != r.Bidder {
		return
	}
	j, t := au.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		if r.Accept { // the task moved on meanwhile: withdraw
			au.send(r.Bidder, CancelTask{Key: a.id.Key, Epoch: a.id.Epoch, Reason: "award withdrawn"})
		}
		au.dropAuction(a.id.Key)
		return
	}
	if !r.Accept {
		au.event(a.id.Key.Job, fmt.Sprintf("%s: %s declined the award: %s", a.id.Key, r.Bidder, r.Reason))
		a.awardee = nil
		au.awardNext(a)
		return
	}
	au.dropAuction(a.id.Key)
	au.move(j, t, change{ev: evAward, node: r.Bidder})
	au.noteAward(t, *a.awardee, r.Start)
	au.event(j.ID, fmt.Sprintf("%s: awarded to %s (attempt %d, epoch %d)", t.Key, r.Bidder, t.Attempts, t.Epoch))
}
