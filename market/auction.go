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
	direct     bool      // a stolen replica, awarded to the thief without a bid
}

// placeReady opens an auction for every pending replica without one whose
// back-off has passed: those of the jobs whose timers are due.
func (m *Market) placeReady() {
	var lacking []inputLack
	for j, t := range tasksOf(m.dueJobs()) {
		if t.State != TaskPending || m.auctions[t.Key] != nil || m.now.Before(t.NotBefore) {
			continue
		}
		if why := m.unresolved(j, t); why != "" {
			lacking = append(lacking, inputLack{j, t, why})
			continue
		}
		if j.isGang(t.Key.Task) {
			if t.Key.Replica == 0 {
				m.placeGang(j, t.Key.Task)
			}
			continue
		}
		m.openAuction(j, t)
	}
	for _, l := range lacking {
		m.failLacking(l)
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
		Estimate: est, Request: ts.Request, Inputs: m.inputSizes(j, ts)}
}

func (m *Market) openAuction(j *JobRecord, t *TaskRecord) {
	delete(m.inherited, t.Key)
	t.Epoch = m.nextEpoch(j, t.Epoch)
	m.touch(j.ID)
	a := &auction{id: AuctionID{Key: t.Key, Epoch: t.Epoch}, offer: m.offer(j, t)}
	m.putAuction(a)
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
	a.open(m.now, m.cfg.BidWindow)
	a.closed, a.ranked, a.awardee, a.nextAt, a.direct = false, nil, nil, time.Time{}, false
	tried := map[NodeID]bool{}
	for _, h := range t.History {
		if h.State == TaskFailed {
			tried[h.Node] = true
		}
	}
	cands := m.candidates(a.offer, tried)
	n := m.cfg.D << min(a.id.Round, 10)
	if !a.offer.Request.GPU.Wants() {
		inviteOneGPUNode(cands, n)
	}
	cfp := CFP{Auction: a.id, Manager: m.cfg.Self, Task: a.offer}
	// A lone node (no peer in its view) asks only itself: the round
	// closes as soon as its own answer is in, with no window to wait out.
	if len(cands) < m.cfg.D && len(m.view) > 0 {
		a.broadcast = true
		m.emit(Broadcast{Msg: m.withTicket(cfp)})
	}
	m.call(&a.round, cfp, cands, n)
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
func (m *Market) candidates(o TaskOffer, tried map[NodeID]bool) []candidate {
	req, inputs := o.Request, o.Inputs
	m.refreshHead()
	var cands []candidate
	consider := func(id NodeID, site string, labels map[string]string, lim resource.Enforcement, capv, free resource.Vector, wait time.Duration, holds func(string) bool) {
		if couldHold(site, labels, lim, capv, req) != "" {
			return
		}
		c := candidate{id: id, tried: tried[id], wait: wait, tie: m.rng.Int63()}
		if _, why := resource.Fit(free, req); why == "" {
			c.wait = 0
		} else if c.wait <= 0 {
			c.wait = time.Millisecond
		}
		// Data it lacks has to move first (locality).
		c.wait += m.transferTime(lacking(inputs, holds))
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
	consider(m.cfg.Self, m.cfg.Site, m.cfg.Labels, m.cfg.Limits, m.c.capacity, m.freeFor(o, m.c.free, m.Reserved()), m.PredictedWait(m.now), m.cfg.Holds)
	ids := make([]NodeID, 0, len(m.view))
	for id := range m.view {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := m.view[id]
		consider(p.ID, p.Site, p.Labels, p.Limits, p.Capacity, m.freeFor(o, p.Free, p.Reserved), p.PredictedWait, p.holds)
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
	m.dl.retimeAuction(id.Key) // the caller may change it
	return a
}

func (m *Market) onBid(b Bid) { m.onAnswer(b.Auction, b.Bidder, &b, nil) }

func (m *Market) onNoBid(nb NoBid) {
	m.onNoBidTicket(nb)
	m.onAnswer(nb.Auction, nb.Bidder, nil, &nb)
}

// onAnswer records a bidder's first answer (a bid, or with b nil the
// refusal nb) to the gang or single-task auction it names, if that round
// is still taking answers, and closes a single-task round once everyone
// invited answered.
func (m *Market) onAnswer(id AuctionID, bidder NodeID, b *Bid, nb *NoBid) {
	if g := m.liveGang(id); g != nil {
		if !g.holding && g.nextAt.IsZero() {
			g.take(bidder, b, nb)
		}
		return
	}
	if a := m.liveAuction(id); a != nil && !a.closed && a.take(bidder, b, nb) {
		m.maybeClose(a)
	}
}

// maybeClose closes the auction early once every invited node answered
// (never for a broadcast, whose audience is unknown).
func (m *Market) maybeClose(a *auction) {
	if !a.broadcast && !a.silent() {
		m.closeAuction(a)
	}
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
	if !a.broadcast && a.mayWait(m.now, m.cfg.MaxBidWindow) {
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
		m.dropAuction(a.id.Key)
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
		m.emit(RoundClosed{Auction: a.id, Opened: a.start, Closed: m.now, Bids: len(a.bids), Invited: len(a.invited)})
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
		m.dropAuction(a.id.Key)
		return
	}
	if len(a.ranked) == 0 {
		a.nextAt = m.now.Add(m.cfg.RoundBackoff)
		return
	}
	b := a.ranked[0]
	a.ranked = a.ranked[1:]
	a.awardee, a.awardBy, a.unanswered = &b, m.now.Add(m.cfg.AwardTimeout), false
	ts, _ := j.Spec.Task(t.Key.Task)
	spec := signedTask(&j.Spec, ts, j.Owner, false).withDecisions(TaskSpec{TaskOffer: a.offer,
		Epoch: t.Epoch, Attempt: t.Attempts + 1, Previous: previous(t), Inputs: m.inputRefs(j, ts)})
	m.send(b.Bidder, Award{Auction: a.id, Manager: m.cfg.Self, Task: spec, Bid: b, Last: len(a.bids) == 1 && len(a.ranked) == 0 && !a.broadcastPending(),
		Ticket: m.tix.forPeer(j, b.Bidder), Direct: a.direct})
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
func (m *Market) onNoBidTicket(nb NoBid) {
	if nb.NeedTicket {
		m.tix.lost(nb.Auction.Key.Job, nb.Bidder)
	}
}

func (m *Market) newRound(a *auction) {
	_, t := m.find(a.id.Key)
	if t == nil || t.State != TaskPending {
		m.dropAuction(a.id.Key)
		return
	}
	a.id.Round++
	m.sendCFPs(a, t)
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
func (m *Market) awardUnanswered(a *auction) {
	k, who := a.id.Key, a.awardee.Bidder
	if !a.unanswered {
		a.unanswered = true
		a.awardBy = a.awardBy.Add(max(m.cfg.LeaseTimeout-m.cfg.AwardTimeout, 0))
		m.event(k.Job, fmt.Sprintf("%s: no answer to award from %s yet; waiting for word of it until %s", k, who, a.awardBy.Format("15:04:05.000")))
		return
	}
	m.event(k.Job, fmt.Sprintf("%s: no answer to award from %s; placing again with a new epoch", k, who))
	m.send(who, CancelTask{Key: k, Epoch: a.id.Epoch, Reason: "award withdrawn: no answer"})
	m.dropAuction(k) // placeReady opens the next auction, with the next epoch
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
		m.dropAuction(a.id.Key)
		return
	}
	if !r.Accept {
		m.event(a.id.Key.Job, fmt.Sprintf("%s: %s declined the award: %s", a.id.Key, r.Bidder, r.Reason))
		a.awardee = nil
		m.awardNext(a)
		return
	}
	m.dropAuction(a.id.Key)
	m.move(j, t, change{ev: evAward, node: r.Bidder})
	m.noteAward(t, *a.awardee, r.Start)
	m.event(j.ID, fmt.Sprintf("%s: awarded to %s (attempt %d, epoch %d)", t.Key, r.Bidder, t.Attempts, t.Epoch))
}
