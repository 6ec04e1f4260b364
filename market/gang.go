package market

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// Gang scheduling: the replicas of a task marked gang start together, on
// distinct nodes unless the task may pack, or not at all.
//
// The manager runs one auction for the whole gang (the offer names
// replica 0 and carries GangSize). Bidders say how many replicas they
// could start now (Slots). The manager picks the holders, then starts the
// gang in two phases: Hold (each holder sets the replica's resources aside
// until a short expiry) and, once every hold is taken, Commit (each holder
// starts its replica with its rank and the gang's nodes). A refused or
// unanswered hold releases every hold of the attempt at once and the gang
// retries after a randomized back-off, so competing gangs cannot deadlock:
// holds never wait, they are taken or refused, and they expire.
//
// A gang that has waited longer than GangReserveAfter reserves its chosen
// nodes: they stop starting new tasks that would take the resources a
// replica needs (running tasks finish normally), so a stream of small tasks
// cannot starve a large gang.

// gangAuction is the manager's state for placing one gang.
type gangAuction struct {
	round
	job, task string
	size      int
	pack      bool
	epoch     uint64
	roundNo   int // the current round's number (AuctionID.Round)
	offer     TaskOffer
	owner     string // the job's owner: the head's order weighs their fair share
	holding   bool
	holders   []NodeID // per rank
	holdOK    []bool
	holdBy    time.Time
	nextAt    time.Time
	parks     int       // rounds since it was found unplaceable (parkBackoff)
	since     time.Time // first round of this placement: the starvation clock
	ready     time.Time // when the gang's replicas became ready: its place in the reservation order
	reserved  []NodeID
	// reservedUntil is when the reservations lapse unless renewed.
	reservedUntil time.Time
	idle          int  // rounds skipped in a row because the view showed no room
	wide          int8 // 1: a head candidate (head.go), -1: not, 0: not asked yet
}

// gangBlocked reports whether a gang's next round would be wasted: the
// view shows fewer nodes with room for a replica now than the gang needs,
// though enough could ever hold one (else the round must run, to fail the
// gang with its reason). Such a round is skipped — a reservation is only
// renewed when due — and the gang looks again after a back-off that
// doubles up to a third of ReserveTTL; after Config.GangForceEvery
// skips one runs regardless. A waiting gang of 64 would otherwise invite 128 nodes every
// few seconds for hours.
func (gs *gangManager) gangBlocked(g *gangAuction) bool {
	if gs.cfg.GangForceEvery > 0 && g.idle >= gs.cfg.GangForceEvery {
		return false
	}
	room, capable := gs.viewRoom(g)
	need := g.size
	if g.pack {
		need = 1
	}
	if room >= need || capable < need {
		return false
	}
	g.idle++
	back := min(gs.cfg.RoundBackoff<<min(g.idle+g.roundNo, 16), gs.cfg.ReserveTTL/3)
	back += time.Duration(gs.rng.Int63n(int64(back)/2 + 1))
	g.nextAt = gs.now.Add(back)
	if len(g.reserved) > 0 && g.nextAt.After(g.reservedUntil.Add(-gs.cfg.ReserveTTL/3)) {
		gs.renewReserve(g)
	}
	return true
}

// roomAppeared wakes a gang placed here when an advert shows that the
// nodes it reserved now have room for all its replicas (prev: the
// peer's advert before; nil for a new peer). A reserved gang otherwise
// looks again when its bidders predicted room, or after a third of
// ReserveTTL (minutes) when they could not say, while the room kept for
// it idles. Only a gang's own reserved nodes wake it: waking every gang
// that could use any room that appeared (measured) let gangs behind the
// head take the room the head waited for — KTH's first 2,000 jobs waited
// 4× longer (docs/performance.md).
func (gs *gangManager) roomAppeared(prev, p *Peer) {
	if p.Reserved.Gang == "" {
		return
	}
	g := gs.gangs[p.Reserved.Gang]
	if g == nil || g.holding || !gs.now.Before(g.nextAt) || !slices.Contains(g.reserved, p.ID) {
		return
	}
	if !gs.peerRoom(p, g) || (prev != nil && prev.Reserved.Gang == p.Reserved.Gang && gs.peerRoom(prev, g)) {
		return
	}
	need := g.size
	if g.pack {
		need = 1
	}
	room := 0
	for _, n := range g.reserved {
		switch q := gs.view[n]; {
		case n == gs.cfg.Self:
			if fits(gs.con.availFor(p.Reserved.Gang), g.offer.Request) {
				room++
			}
		case q != nil && gs.peerRoom(q, g):
			room++
		}
	}
	if room >= need {
		g.nextAt = gs.now
		gs.dl.retimeGang(p.Reserved.Gang)
	}
}

// releaseStale frees again a reservation peer p advertises for a gang
// of a job this node manages that no longer reserves p: the release was
// lost. Reservations last ReserveTTL (30 minutes) unless renewed, so
// this, not the clock, is what frees such a node.
func (gs *gangManager) releaseStale(p *Peer) {
	id := p.Reserved.Gang
	if id == "" {
		return
	}
	if g := gs.gangs[id]; g != nil {
		if !slices.Contains(g.reserved, p.ID) {
			gs.send(p.ID, Reserve{Auction: g.id(), Manager: gs.cfg.Self, Request: g.offer.Request})
		}
		return
	}
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return
	}
	if j := gs.jobs[id[:i]]; j != nil && j.Manager == gs.cfg.Self {
		gs.send(p.ID, Reserve{Auction: AuctionID{Key: TaskKey{Job: id[:i], Task: id[i+1:]}}, Manager: gs.cfg.Self})
	}
}

// peerRoom reports whether peer p's advert shows room for a replica of
// gang g now, beside any other gang's reservation it keeps.
func (gs *gangManager) peerRoom(p *Peer, g *gangAuction) bool {
	req := g.offer.Request
	if couldHold(p.Site, p.Labels, p.Limits, p.Capacity, req) != "" {
		return false
	}
	free := p.Free
	if p.Reserved.Gang != "" && p.Reserved.Gang != gangID(g.job, g.task) {
		free = p.Reserved.Unreserved
	}
	return fits(free, req)
}

// viewRoom counts the nodes of the view, this one included, that could
// ever hold a replica of gang g (capable) and that have room for one now,
// as advertised. A node that keeps room for another gang has only the
// room beside that reservation: counting its whole free room made gangs
// call, round after round, nodes that could only refuse them (millions of
// calls for bids on an SWF replay).
func (gs *gangManager) viewRoom(g *gangAuction) (room, capable int) {
	req, id := g.offer.Request, gangID(g.job, g.task)
	gs.refreshHead()
	// A gang whose estimate ends by the head's shadow time may use the
	// room the head's nodes keep (head.go).
	lends := ""
	if h := gs.con.head; h != nil && h.known && h.Gang != id && g.offer.Estimate > 0 && !gs.now.Add(g.offer.Estimate).After(h.shadow) {
		lends = h.Gang
	}
	count := func(site string, labels map[string]string, lim resource.Enforcement, capv, free resource.Vector, r ReservedRoom) {
		if couldHold(site, labels, lim, capv, req) != "" {
			return
		}
		capable++
		if r.Gang != "" && r.Gang != id && r.Gang != lends {
			free = r.Unreserved
		}
		if fits(free, req) {
			room++
		}
	}
	count(gs.cfg.Site, gs.cfg.Labels, gs.cfg.Limits, gs.con.capacity, gs.con.free, gs.reserved())
	for _, p := range gs.view {
		count(p.Site, p.Labels, p.Limits, p.Capacity, p.Free, p.Reserved)
	}
	return room, capable
}

// renewReserve (re)sends the gang's reservations, for ReserveTTL.
func (gs *gangManager) renewReserve(g *gangAuction) {
	g.reservedUntil = gs.now.Add(gs.cfg.ReserveTTL)
	for _, n := range g.reserved {
		gs.send(n, Reserve{Auction: g.id(), Manager: gs.cfg.Self, Request: g.offer.Request, Priority: g.offer.Priority, Until: g.reservedUntil, Since: g.ready})
	}
}

func gangID(job, task string) string { return job + "/" + task }

func (g *gangAuction) id() AuctionID {
	return AuctionID{Key: TaskKey{Job: g.job, Task: g.task}, Epoch: g.epoch, Round: g.roundNo}
}

// placeGang opens a gang auction when every replica of the task is
// pending and past its back-off.
func (gs *gangManager) placeGang(j *JobRecord, task string) {
	id := gangID(j.ID, task)
	if gs.gangs[id] != nil {
		return
	}
	ts, _ := j.Spec.Task(task)
	replicas := ts.Replicas
	var recs []*TaskRecord
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.Key.Task != task {
			continue
		}
		if t.State != TaskPending || gs.now.Before(t.NotBefore) {
			return
		}
		recs = append(recs, t)
	}
	if len(recs) != replicas {
		return
	}
	var epoch uint64
	for _, t := range recs {
		epoch = max(epoch, t.Epoch)
	}
	epoch = gs.nextEpoch(j, epoch)
	for _, t := range recs {
		t.Epoch = epoch
	}
	gs.touch(j.ID)
	offer := gs.auc.offer(j, recs[0])
	offer.GangSize, offer.Pack = replicas, ts.Pack
	g := &gangAuction{job: j.ID, task: task, size: replicas, pack: ts.Pack, epoch: epoch, offer: offer, owner: j.Owner, since: gs.now, ready: gs.readyTime(j, task)}
	gs.putGang(g)
	gs.gangCFPs(g)
}

// gangCFPs invites candidates for a gang round: enough for the gang and
// then some (max(d, 2·size)·2^round), broadcasting when the view is thin.
func (gs *gangManager) gangCFPs(g *gangAuction) {
	g.open(gs.now, gs.cfg.BidWindow)
	g.holding, g.holders, g.holdOK, g.nextAt = false, nil, nil, time.Time{}
	cands := gs.auc.candidates(g.offer, nil)
	n := max(gs.cfg.D, 2*g.size) << min(g.roundNo, 10)
	cfp := CFP{Auction: g.id(), Manager: gs.cfg.Self, Task: g.offer}
	if len(cands) < max(gs.cfg.D, g.size) {
		gs.emit(Broadcast{Msg: gs.tix.withTicket(cfp)})
	}
	gs.auc.call(&g.round, cfp, cands, n)
	if len(g.invited) == 0 {
		g.closeAt = gs.now.Add(gs.cfg.MaxBidWindow)
	}
}

func (gs *gangManager) liveGang(id AuctionID) *gangAuction {
	g := gs.gangs[gangID(id.Key.Job, id.Key.Task)]
	if g == nil || g.id() != id {
		return nil
	}
	gs.dl.retimeGang(gangID(id.Key.Job, id.Key.Task)) // the caller may change it
	return g
}

// gangTick advances the gang auctions whose timers are due: closes
// windows, times out holds, opens new rounds.
func (gs *gangManager) gangTick() {
	gs.setTimers()
	var ids []string
	gs.dl.gangs.popDue(gs.now, func(k timerKey) { ids = append(ids, k.id) })
	sort.Strings(ids)
	for _, id := range ids {
		gs.dl.retimeGang(id)
		g := gs.gangs[id]
		switch {
		case g == nil:
		case g.holding && !gs.now.Before(g.holdBy):
			gs.event(g.job, fmt.Sprintf("%s: gang holds unanswered; releasing", id))
			gs.abortHolds(g)
		case !g.holding && g.nextAt.IsZero() && !gs.now.Before(g.closeAt):
			if g.mayWait(gs.now, gs.cfg.MaxBidWindow) {
				g.closeAt = gs.now.Add(gs.cfg.BidWindow / 2)
				continue
			}
			gs.closeGang(g)
		case !g.holding && !g.nextAt.IsZero() && !gs.now.Before(g.nextAt):
			if gs.gangBlocked(g) {
				continue
			}
			g.idle = 0
			g.roundNo++
			gs.gangCFPs(g)
		}
	}
}

// closeGang picks holders from the bids, or backs off, reserves or fails.
func (gs *gangManager) closeGang(g *gangAuction) {
	j := gs.jobs[g.job]
	sort.SliceStable(g.bids, func(a, b int) bool {
		x, y := g.bids[a], g.bids[b]
		if x.Slots > 0 != (y.Slots > 0) {
			return x.Slots > 0
		}
		if x.Score != y.Score {
			return x.Score > y.Score
		}
		return x.Bidder < y.Bidder
	})
	var holders []NodeID
	for _, b := range g.bids {
		for s := 0; s < b.Slots && len(holders) < g.size; s++ {
			holders = append(holders, b.Bidder)
			if !g.pack {
				break
			}
		}
	}
	capable := len(g.bids)
	if g.pack {
		capable = g.size // packing: one capable node can take them all in turn
		if len(g.bids) == 0 {
			capable = 0
		}
	}
	if len(holders) == g.size {
		gs.takeHolds(g, holders)
		return
	}
	ready := gs.readyTime(j, g.task)
	waited, timeout := gs.now.Sub(ready), gs.pendingTimeout(j)
	// One round's bids can fall short because a bidder is down or a bid
	// was lost; the gang is unplaceable only when the view, too, knows
	// too few nodes that could ever hold a replica.
	unplaceable := false
	if capable < g.size && (timeout > 0 && waited >= timeout || waited >= ParkAfter) {
		need := g.size
		if g.pack {
			need = 1
		}
		_, known := gs.viewRoom(g)
		unplaceable = known < need
	}
	if unplaceable && timeout > 0 && waited >= timeout {
		gs.failGang(j, g, capable)
		return
	}
	back := gs.cfg.RoundBackoff << min(g.roundNo, 4)
	back = min(back, 2*time.Second)
	if unplaceable {
		// As for a single replica (closeAuction): wait for a node.
		back = parkBackoff(g.parks)
		g.parks++
		if gs.parkedGangs == nil {
			gs.parkedGangs = map[string]struct{}{}
		}
		gs.parkedGangs[gangID(g.job, g.task)] = struct{}{}
		if timeout > 0 && ready.Add(timeout).Before(gs.now.Add(back)) {
			back = ready.Add(timeout).Sub(gs.now)
		}
		g.nextAt = gs.now.Add(back)
		return
	}
	if capable >= g.size && gs.now.Sub(g.since) >= gs.cfg.GangReserveAfter {
		gs.reserveFor(g)
		// Reserved nodes take no new work: look again about when the
		// size-th best bidder expects room (half that wait, so the start
		// is not late), at least every RoundBackoff and often enough to
		// renew the reservation.
		// When no bidder can say (room is held by reservations ahead of
		// this one), back off exponentially instead.
		back = gs.cfg.RoundBackoff
		if wait := gs.gangRoomIn(g); wait > 2*back {
			back = wait / 2
		} else if g.slotsBid() < g.size {
			back = gs.cfg.RoundBackoff << min(g.roundNo, 16)
		}
		back = min(back, gs.cfg.ReserveTTL/3) // with the jitter below, renewed before it lapses
	}
	back += time.Duration(gs.rng.Int63n(int64(back) + 1)) // randomized: competing gangs drift apart
	g.nextAt = gs.now.Add(back)
}

func (gs *gangManager) readyTime(j *JobRecord, task string) time.Time {
	var r time.Time
	for _, t := range j.Tasks {
		if t.Key.Task == task && (r.IsZero() || t.Ready.After(r)) {
			r = t.Ready
		}
	}
	return r
}

// reserveFor asks the gang's best candidates to keep room for a replica.
func (gs *gangManager) reserveFor(g *gangAuction) {
	var nodes []NodeID
	for _, b := range g.bids {
		if len(nodes) < g.size {
			nodes = append(nodes, b.Bidder)
		}
	}
	if len(g.reserved) == 0 {
		gs.event(g.job, fmt.Sprintf("%s/%s: gang waited %v; reserving %d nodes", g.job, g.task, gs.now.Sub(g.since).Round(time.Millisecond), len(nodes)))
	}
	for _, n := range g.reserved {
		if !slices.Contains(nodes, n) { // dropped from the set: free it now, not at expiry
			gs.send(n, Reserve{Auction: g.id(), Manager: gs.cfg.Self, Request: g.offer.Request, Until: time.Time{}})
		}
	}
	g.reserved = nodes
	gs.renewReserve(g)
}

// takeHolds starts phase one: a Hold to every chosen holder.
func (gs *gangManager) takeHolds(g *gangAuction, holders []NodeID) {
	j := gs.jobs[g.job]
	ts, _ := j.Spec.Task(g.task)
	g.holding, g.holders, g.holdOK = true, holders, make([]bool, len(holders))
	g.holdBy = gs.now.Add(gs.cfg.AwardTimeout)
	expires := gs.now.Add(gs.cfg.HoldExpiry)
	for r, n := range holders {
		t := j.task(TaskKey{Job: g.job, Task: g.task, Replica: r})
		offer := g.offer
		offer.Key = t.Key
		spec := signedTask(&j.Spec, ts, j.Owner, true).withDecisions(TaskSpec{TaskOffer: offer,
			Epoch: g.epoch, Attempt: t.Attempts + 1, Rank: r, Previous: previous(t), Inputs: gs.auc.inputRefs(j, ts)})
		gs.send(n, Hold{Auction: g.id(), Manager: gs.cfg.Self, Task: spec, Expires: expires, Ticket: gs.tix.forPeer(j, n)})
	}
}

func (gs *gangManager) onHoldReply(r HoldReply) {
	g := gs.liveGang(r.Auction)
	if g == nil || !g.holding || r.Replica < 0 || r.Replica >= len(g.holders) || g.holders[r.Replica] != r.Bidder {
		if r.OK { // a hold nobody waits for any more: give it back
			gs.send(r.Bidder, Release{Key: TaskKey{Job: r.Auction.Key.Job, Task: r.Auction.Key.Task, Replica: r.Replica}, Epoch: r.Auction.Epoch})
		}
		return
	}
	if !r.OK {
		gs.event(g.job, fmt.Sprintf("%s/%s: hold for rank %d refused by %s: %s", g.job, g.task, r.Replica, r.Bidder, r.Reason))
		gs.abortHolds(g)
		return
	}
	g.holdOK[r.Replica] = true
	for _, ok := range g.holdOK {
		if !ok {
			return
		}
	}
	gs.commitGang(g)
}

// abortHolds releases every hold of the attempt at once and backs off.
func (gs *gangManager) abortHolds(g *gangAuction) {
	for r, n := range g.holders {
		gs.send(n, Release{Key: TaskKey{Job: g.job, Task: g.task, Replica: r}, Epoch: g.epoch})
	}
	g.holding = false
	back := gs.cfg.RoundBackoff + time.Duration(gs.rng.Int63n(int64(4*gs.cfg.RoundBackoff)+1))
	g.nextAt = gs.now.Add(back)
}

// commitGang is phase two: every replica starts with its rank.
func (gs *gangManager) commitGang(g *gangAuction) {
	j := gs.jobs[g.job]
	gs.dropGang(g.job, g.task)
	for r, n := range g.holders {
		t := j.task(TaskKey{Job: g.job, Task: g.task, Replica: r})
		gs.move(j, t, change{ev: evAward, node: n})
		gs.send(n, Commit{Key: t.Key, Epoch: g.epoch, Rank: r, Peers: g.holders})
	}
	if len(g.reserved) > 0 {
		for _, n := range g.reserved {
			gs.send(n, Reserve{Auction: g.id(), Manager: gs.cfg.Self, Request: g.offer.Request, Until: time.Time{}})
		}
	}
	gs.event(j.ID, fmt.Sprintf("%s/%s: gang of %d committed on %v (epoch %d) after %v", g.job, g.task, g.size, g.holders, g.epoch, gs.now.Sub(g.since).Round(time.Millisecond)))
}

// failGang fails a gang no set of nodes can ever hold.
func (gs *gangManager) failGang(j *JobRecord, g *gangAuction, capable int) {
	gs.dropGang(g.job, g.task)
	why := fmt.Sprintf("gang of %d replicas needs %d distinct nodes that can each hold one, only %d can", g.size, g.size, capable)
	if capable == 0 {
		why = gs.mgr.unplaceableReason(&auction{offer: g.offer, round: round{nobids: g.nobids}})
	}
	full := fmt.Sprintf("task %s cannot be scheduled within %s: %s", g.task, timeoutText(j, gs.pendingTimeout(j)), why)
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.Key.Task == g.task {
			gs.move(j, t, change{ev: evFail, exit: -1, reason: why})
		}
	}
	gs.event(j.ID, full)
	gs.mgr.endJob(j, JobFailed, full)
}

// gangReplicaEnded handles a replica of a running gang that stopped
// without success: the others are stopped and the whole gang is placed
// again; a failure counts once for the gang.
func (gs *gangManager) gangReplicaEnded(j *JobRecord, t *TaskRecord, s TaskStatus) {
	ts, _ := j.Spec.Task(t.Key.Task)
	failed := s.State == TaskFailed
	if failed {
		for i := range j.Tasks {
			if o := &j.Tasks[i]; o.Key.Task == t.Key.Task {
				o.Failures++
			}
		}
	}
	final := failed && t.Failures > ts.Retries
	c := change{ev: evGangRequeue, at: gs.now, exit: s.ExitCode, reason: s.Reason}
	if final {
		c.ev = evGangFail
	} else if failed {
		c.at = gs.now.Add(min(gs.cfg.RetryBase<<min(t.Failures-1, 20), gs.cfg.RetryMax))
	}
	why := fmt.Sprintf("gang member rank %d %s", t.Key.Replica, s.State)
	for i := range j.Tasks {
		o := &j.Tasks[i]
		if o.Key.Task != t.Key.Task {
			continue
		}
		c.ended = attemptEnd{s.State, s.ExitCode, s.Reason}
		if o.Key != t.Key {
			c.ended = attemptEnd{TaskCancelled, -1, why}
			if o.State == TaskAwarded || o.State == TaskRunning {
				gs.send(o.Node, CancelTask{Key: o.Key, Epoch: o.Epoch, Reason: why})
			}
		}
		gs.move(j, o, c)
	}
	if final {
		reason := fmt.Sprintf("task %s failed after %d attempts: rank %d exited with code %d: %s", t.Key.Task, t.Attempts, t.Key.Replica, s.ExitCode, s.Reason)
		gs.event(j.ID, reason)
		gs.mgr.endJob(j, JobFailed, reason)
		return
	}
	gs.event(j.ID, fmt.Sprintf("%s: rank %d %s on %s (exit %d: %s); gang placed again", t.Key.Task, t.Key.Replica, s.State, s.Node, s.ExitCode, s.Reason))
}

// slotsBid is how many replicas the round's bidders could start now.
func (g *gangAuction) slotsBid() int {
	n := 0
	for _, b := range g.bids {
		n += b.Slots
	}
	return n
}

// gangRoomIn is how long until the size-th earliest bidder of the round
// predicts it could start a replica (0 when unknown).
func (gs *gangManager) gangRoomIn(g *gangAuction) time.Duration {
	if len(g.bids) < g.size {
		return 0
	}
	starts := make([]time.Time, 0, len(g.bids))
	for _, b := range g.bids {
		starts = append(starts, b.Start)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	return max(starts[g.size-1].Sub(gs.now), 0)
}
