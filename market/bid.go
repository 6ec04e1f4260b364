package market

import (
	"fmt"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// onCFP answers a call for proposals: a NoBid when the node could never
// run the task, else a Bid with its score and predicted start and finish.
func (c *contractor) onCFP(from NodeID, cfp CFP) {
	o := cfp.Task
	if c.draining {
		c.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: c.cfg.Self, Reason: "node draining"})
		return
	}
	if why := resource.Constraints(c.cfg.Site, c.cfg.Labels, o.Request); why != "" {
		c.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: c.cfg.Self, Reason: why, Permanent: true})
		return
	}
	if _, why := resource.Fit(c.wholeCapacity(), o.Request); why != "" {
		c.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: c.cfg.Self, Reason: why, Permanent: true})
		return
	}
	if why := c.cfg.Limits.Refusal(o.Request); why != "" {
		c.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: c.cfg.Self, Reason: why, Permanent: true})
		return
	}
	if held, total := c.auc.heldInputs(o.Inputs); c.capacity.Disk > 0 && total-held > c.free.Disk {
		c.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: c.cfg.Self,
			Reason: fmt.Sprintf("disk: its inputs need %s more, %s free", resource.FormatSize(total-held), resource.FormatSize(c.free.Disk))})
		return
	}
	if o.Request.GPU.Wants() {
		c.mix.observe(o.Request) // see demandMix on why GPU work only
	}
	c.dropSuperseded(o.Key, cfp.Auction.Epoch)
	if _, busy := c.running[o.Key]; busy || c.queued(o.Key) {
		c.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: c.cfg.Self, Reason: "already holds this task"})
		return
	}
	if c.tix.trusted() && !c.tix.vouch(cfp) {
		return
	}
	c.gang.refreshHead()
	b := c.makeBid(cfp.Auction, o)
	if o.GangSize > 1 {
		b.Preempt = false
		if b.Slots = c.gangSlots(o, c.now); b.Slots > 0 {
			b.Start, b.Finish = c.now, c.now.Add(b.Runtime)
		} else if !b.Start.After(c.now) {
			b.Start = c.now.Add(time.Millisecond) // room only after reservations
			b.Finish = b.Start.Add(b.Runtime)
		}
	}
	c.madeBid(cfp.Auction, c.now)
	c.send(cfp.Manager, b)
}

// dropSuperseded forgets a queued contract for key of an epoch older than
// epoch: its manager has placed the task again (its lease lapsed, say,
// while this node was slow to renew it), so the old contract can never
// run — its start would be rejected as stale — and holding it would make
// this node refuse the new placement as "already holds this task".
func (c *contractor) dropSuperseded(key TaskKey, epoch uint64) {
	for _, k := range c.queue {
		if k.spec.Key == key && k.spec.Epoch < epoch {
			c.dequeue(key)
			c.event("", fmt.Sprintf("%s: queued epoch %d dropped, superseded by epoch %d", key, k.spec.Epoch, epoch))
			return
		}
	}
}

// tookAward says whether this node accepted award a already — it holds
// the replica at the award's epoch from the manager that awards it, queued
// or running, or has its final report — and when it started it (or
// expects to). The awarder, not the manager the tasks report to now: a
// repeat that arrives after the job re-homed is still a repeat (the
// fault campaign's seed 5546 ran an attempt it had stopped again).
func (c *contractor) tookAward(a Award) (time.Time, bool) {
	k := a.Task.Key
	if r := c.running[k]; r != nil && r.spec.Epoch == a.Task.Epoch && r.awarder == a.Manager {
		return r.started, true
	}
	for _, q := range c.queue {
		if q.spec.Key == k && q.spec.Epoch == a.Task.Epoch && q.awarder == a.Manager {
			return q.accepted, true
		}
	}
	if r := c.resultOf[resultID{k, a.Task.Epoch, a.Task.Attempt}]; r != nil && r.awarder == a.Manager {
		return r.st.Time, true
	}
	return time.Time{}, false
}

func (c *contractor) queued(key TaskKey) bool {
	for _, k := range c.queue {
		if k.spec.Key == key {
			return true
		}
	}
	return false
}

// makeBid computes this node's bid for an offer at the current time.
func (c *contractor) makeBid(id AuctionID, o TaskOffer) Bid {
	now := c.now
	rt := c.predictRuntime(o, now)
	start := c.predictStart(o, now)
	preempt := false
	if start.Sub(now) > c.cfg.PreemptWait && c.victims(o.Request, o.Priority, c.cfg.PreemptMargin) != nil {
		start, preempt = now, true
	}
	held, total := c.auc.heldInputs(o.Inputs)
	start = start.Add(c.auc.transferTime(total - held))
	finish := start.Add(rt)
	in := ScoreInput{Now: now, Offer: o, Capacity: c.capacity, Free: c.free, Start: start, Finish: finish,
		Runtime: rt, SuccessRate: c.successRate(o.Type), Weights: c.cfg.Weights}
	if !start.After(now) && !preempt {
		in.FragDelta, in.FragKnown = c.mix.fragDelta(c.free, o.Request)
	}
	score := c.scorer.Score(in)
	if total > 0 {
		// Locality: half the score is the share of the input held here.
		score = 0.5*score + 0.5*float64(held)/float64(total)
	}
	return Bid{Auction: id, Bidder: c.cfg.Self, Score: score, Start: start, Finish: finish, Runtime: rt, Preempt: preempt}
}

// onAward accepts an award if the node can still honour its bid (start no
// later than bid start + slack, or the eviction still works), else declines.
func (c *contractor) onAward(a Award) {
	key := a.Task.Key
	reply := AwardReply{Auction: a.Auction, Bidder: c.cfg.Self}
	if start, ok := c.tookAward(a); ok {
		// A repeat of an award this node accepted (the network delivered
		// it twice): accepted again. Its bid is spent, and refused as
		// unbid the repeat's answer could overtake the acceptance, and the
		// manager award the same epoch to the next bidder — one attempt
		// started on two nodes (the fault campaign's seed 435).
		reply.Accept, reply.Start = true, start
		c.send(a.Manager, reply)
		return
	}
	if c.draining {
		reply.Reason = "node draining"
		c.send(a.Manager, reply)
		return
	}
	task, why := c.tix.mayTake(a)
	if why != "" {
		reply.Reason = why
		c.send(a.Manager, reply)
		return
	}
	a.Task = task
	c.dropSuperseded(key, a.Task.Epoch)
	if _, busy := c.running[key]; busy || c.queued(key) {
		reply.Reason = "already holds this task"
		c.send(a.Manager, reply)
		return
	}
	c.gang.refreshHead()
	rt := c.predictRuntime(a.Task.TaskOffer, c.now)
	slack := max(c.cfg.BidSlack, rt/10)
	start := c.predictStart(a.Task.TaskOffer, c.now)
	ok := !start.After(a.Bid.Start.Add(slack))
	preempt := false
	if !ok && a.Bid.Preempt && c.victims(a.Task.Request, a.Task.Priority, c.cfg.PreemptMargin) != nil {
		ok, preempt = true, true
	}
	// The manager's only bid: run it even if later than bid, but a bid
	// that said it would preempt still preempts (above).
	ok = ok || a.Last
	if !ok {
		reply.Reason = fmt.Sprintf("state changed: would start %v later than bid", start.Sub(a.Bid.Start).Round(time.Millisecond))
		c.send(a.Manager, reply)
		return
	}
	reply.Accept, reply.Start = true, start
	if preempt {
		reply.Start = c.now
	}
	c.accepted++
	c.send(a.Manager, reply)
	c.enqueue(&contract{spec: a.Task, manager: a.Manager, awarder: a.Manager, accepted: c.now, beat: c.now, runtime: rt, preempt: preempt, ticket: c.tix.raw(key.Job)})
	c.schedule()
}
