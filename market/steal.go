package market

import (
	"fmt"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
)

// Work stealing. An idle node (empty queue, at least one free core) asks
// the most loaded peer of its view — the longest queue whose advert's
// StealOffer could give it something — for queued work, at most every
// StealEvery; when no peer's offer fits it waits for an advert or a
// change of its own room, not a timer. The victim hands over up to half of its queued,
// never-started replicas that fit the thief's free room, taking them from
// the back of its queue (lowest priority, latest deadline first), and
// tells each replica's manager with a Transfer. A victim with a single
// queued replica gives it only when it fits the room the thief has free
// now: the replica waits here, and there it starts at once. The manager
// closes the victim's attempt, raises the epoch and awards the replica
// directly to the thief (a decline falls back to a normal auction).
// Results of the old epoch are rejected like any stale report. A node
// that keeps its free room for the head counts it as idle until the
// head's shadow time, and asks only for work that ends by then
// (StealRequest.EndsBy): backfill from every peer's queue.

// StealableQueue is the queue length from which an advertised peer is a
// steal victim: any task that waits is worth asking for.
const StealableQueue = 1

func (c *contractor) maybeSteal() {
	if c.cfg.NoSteal || c.draining || len(c.queue) > 0 || len(c.holds) > 0 {
		return
	}
	// Back off while requests bring nothing (the loaded peers' queues hold
	// nothing this node can run): double the gap up to StealBackoffMax;
	// any award accepted since the last request resets it.
	if c.accepted != c.stealMark || c.stealGap == 0 {
		c.stealGap = c.cfg.StealEvery
	}
	if c.now.Sub(c.lastSteal) < c.stealGap {
		return
	}
	if c.loaded == 0 || c.free.CPU < 1000 {
		return // no peer has a queue worth stealing from, or no core is free
	}
	room, endsBy := c.stealRoom()
	if room.CPU < 1000 {
		return
	}
	victim := c.stealVictim(room, endsBy)
	if victim == nil {
		// Nothing queued in the view fits here: ask again only when an
		// advert shows more, or this node's room changes (nextSteal).
		c.stealNone, c.stealNoneRoom = true, room
		return
	}
	if !c.lastSteal.IsZero() && c.accepted == c.stealMark {
		c.stealGap = min(2*c.stealGap, max(c.cfg.StealBackoffMax, c.cfg.StealEvery))
	}
	c.lastSteal, c.stealMark, c.stolen = c.now, c.accepted, c.now
	// Ask for two waves' worth: the second is queued here while the first
	// runs, so the thief is not idle again before its next request (not
	// for backfill: the victim then gives only the first).
	c.send(victim.ID, StealRequest{Thief: c.cfg.Self, Room: resource.Request{CPU: 2 * room.CPU, Memory: 2 * room.Memory, GPU: resource.GPURequest{Count: 2 * room.FreeGPUs()}}, Max: max(victim.Queue/2, 1), EndsBy: endsBy})
}

// stealVictim is the peer to ask: of those whose adverts show queued
// work that could fit room (and end by endsBy), the longest queue; ties
// to the smallest ID (one pass, no sort). Nil when none.
func (c *contractor) stealVictim(room resource.Vector, endsBy time.Time) *Peer {
	var victim *Peer
	for _, p := range c.view {
		if p.Queue >= StealableQueue && (victim == nil || p.Queue > victim.Queue || (p.Queue == victim.Queue && p.ID < victim.ID)) &&
			p.Steal.mayGive(room, endsBy, c.now) {
			victim = p
		}
	}
	return victim
}

// stealRoom is the room this node would ask peers to fill, and the time
// the work must end by (zero: any time). A node that keeps its free room
// for the head may fill it until the shadow time with work that ends by
// then, from any peer's queue, as EASY backfills its head's room from
// its whole queue; without this that room idled while single-processor
// jobs waited elsewhere (docs/scheduling.md, "Backfill by stealing").
func (c *contractor) stealRoom() (resource.Vector, time.Time) {
	c.gang.refreshHead()
	room := c.availFor("")
	if room.CPU < 1000 && c.headRes() != nil && c.head.shadow.After(c.now) {
		return c.free.Clone(), c.head.shadow
	}
	return room, time.Time{}
}

// onStealRequest gives up to half the queue (and at most Max) to a thief.
func (c *contractor) onStealRequest(r StealRequest) {
	if c.cfg.NoSteal || r.Thief == c.cfg.Self || len(c.queue) == 0 {
		return
	}
	thief := c.view[r.Thief]
	if thief == nil {
		c.tix.refuse(RefuseSteal, r.Thief, "", fmt.Sprintf("steal request from %s refused: not in this node's view", r.Thief))
		return
	}
	n := min(max(len(c.queue)/2, 1), max(r.Max, 1))
	want := r.Room
	if len(c.queue) == 1 || !r.EndsBy.IsZero() {
		// A lone replica moves only to start at once, and so does
		// backfill (queued there it would outlast the shadow): the thief
		// asks for two waves' worth, the first is what it has free.
		want = resource.Request{CPU: want.CPU / 2, Memory: want.Memory / 2, GPU: resource.GPURequest{Count: want.GPU.Count / 2}}
	}
	room := resource.Vector{CPU: want.CPU, Memory: want.Memory}
	for i := 0; i < want.GPU.Count; i++ {
		room.GPUs = append(room.GPUs, resource.GPU{Index: i, Memory: 1 << 50, Free: resource.WholeGPU})
	}
	given := 0
	for i := len(c.queue) - 1; i >= 0 && given < n; i-- {
		k := c.queue[i]
		if !stealable(k) {
			continue
		}
		if !r.EndsBy.IsZero() && c.now.Add(upperRuntime(k.runtime, k.spec.Estimate)).After(r.EndsBy) {
			continue // it would outlast the head's shadow there
		}
		al, why := resource.Fit(room, k.spec.Request)
		if why != "" || !c.mayMove(k, thief) {
			continue
		}
		room.Take(k.spec.Request, al)
		c.queue = append(c.queue[:i], c.queue[i+1:]...)
		given++
		c.send(k.manager, Transfer{Key: k.spec.Key, Epoch: k.spec.Epoch, From: c.cfg.Self, To: r.Thief})
	}
	if given > 0 {
		c.event("", fmt.Sprintf("gave %d queued tasks to %s", given, r.Thief))
	}
}

// stealable reports whether a queued replica may be handed to a thief:
// only requests a thief's room describes exactly. The room's GPUs are
// the thief's whole free cards, so a share of one GPU fits there as a
// whole-card request does (before, a queued share waited for its node
// however many idle peers had free cards).
func stealable(k *contract) bool {
	g := k.spec.Request.GPU
	return !k.preempt && g.Model == "" && g.Memory == 0 && len(k.spec.Request.Devices) == 0 &&
		k.spec.Request.Site == "" && len(k.spec.Request.Labels) == 0 && (g.Share == 0 || g.Count <= 1)
}

// StealOffer is what a node's adverts say its queue could give a thief:
// how many queued replicas may move (stealable), and the least any of
// them asks — CPU, memory and whole GPUs, each the minimum over them, so
// a thief whose room is short of it in any would be given nothing — with
// the shortest upper bound of their runtimes (what a backfilling thief,
// StealRequest.EndsBy, compares). Known is false for a peer that does
// not say (an older node): any queue of its is worth asking.
type StealOffer struct {
	Known       bool
	Count       int
	CPU, Memory int64
	GPUs        int
	Runtime     time.Duration
}

// stealOffer summarises this node's queue for its adverts.
func (c *contractor) stealOffer() StealOffer {
	o := StealOffer{Known: true}
	for _, k := range c.queue {
		if !stealable(k) {
			continue
		}
		r := k.spec.Request
		gpus := r.GPU.Count
		if r.GPU.Share > 0 {
			gpus = 1
		}
		rt := upperRuntime(k.runtime, k.spec.Estimate)
		if o.Count == 0 {
			o.CPU, o.Memory, o.GPUs, o.Runtime = r.CPU, r.Memory, gpus, rt
		}
		o.CPU, o.Memory, o.GPUs, o.Runtime = min(o.CPU, r.CPU), min(o.Memory, r.Memory), min(o.GPUs, gpus), min(o.Runtime, rt)
		o.Count++
	}
	return o
}

// mayGive reports whether a peer's offer could give anything to a thief
// with this room now (endsBy: work must end by then; zero: any time).
// It is a necessary condition only: the victim still picks replicas that
// fit whole.
func (o StealOffer) mayGive(room resource.Vector, endsBy, now time.Time) bool {
	if !o.Known {
		return true
	}
	return o.Count > 0 && o.CPU <= room.CPU && o.Memory <= room.Memory && o.GPUs <= room.FreeGPUs() &&
		(endsBy.IsZero() || !now.Add(o.Runtime).After(endsBy))
}

// onTransfer moves a queued replica from its executor to the thief with a
// new epoch, awarding it directly.
func (c *contractor) onTransfer(x Transfer) {
	j, t := c.find(x.Key)
	if t == nil || j.State.Terminal() {
		return
	}
	if t.Node != x.From || t.Epoch != x.Epoch || t.State != TaskAwarded {
		c.event(j.ID, fmt.Sprintf("%s: stale transfer from %s epoch %d rejected", x.Key, x.From, x.Epoch))
		return
	}
	c.move(j, t, change{ev: evStolen, reason: "stolen by " + string(x.To)})
	t.Epoch = c.nextEpoch(j, t.Epoch)
	a := &auction{id: AuctionID{Key: t.Key, Epoch: t.Epoch}, offer: c.auc.offer(j, t), closed: true, direct: true,
		round: round{invited: map[NodeID]bool{x.To: true}, answered: map[NodeID]bool{x.To: true}}}
	rt := max(c.learned.Predict(j.Spec.Type, a.offer.Estimate).Runtime, time.Millisecond)
	a.ranked = []Bid{{Auction: a.id, Bidder: x.To, Start: c.now, Finish: c.now.Add(rt), Runtime: rt}}
	c.putAuction(a)
	c.event(j.ID, fmt.Sprintf("%s: stolen from %s by %s (epoch %d)", t.Key, x.From, x.To, t.Epoch))
	c.auc.awardNext(a)
}

// mayMove reports whether a queued replica may go to thief: the thief's
// advertised capacity can hold it (whatever room it claims) and, in a
// network with an authority, its site is one the job's user may use.
func (c *contractor) mayMove(k *contract, thief *Peer) bool {
	if couldHold(thief.Site, thief.Labels, thief.Limits, thief.Capacity, k.spec.Request) != "" {
		return false
	}
	if !c.tix.trusted() {
		return true
	}
	info := c.tix.byJob[k.spec.Key.Job]
	return info != nil && auth.CheckTask(info.user.Name, info.user.Quota, k.spec.Key.Task, k.spec.Request, k.spec.Priority, thief.Site) == nil
}

// nextSteal is when maybeSteal would next send a request, if the node
// stays as it is; false when it would not.
func (c *contractor) nextSteal() (time.Time, bool) {
	// The cheap tests first: this runs at every NextTick, and stealRoom
	// finds the head (a fifth of a loaded replay's CPU when it came first).
	// Its room is never more than what is free.
	if c.cfg.NoSteal || c.draining || len(c.queue) > 0 || len(c.holds) > 0 || c.loaded == 0 || c.free.CPU < 1000 {
		return time.Time{}, false
	}
	room, _ := c.stealRoom()
	if c.loaded == 0 || room.CPU < 1000 || (c.stealNone && sameRoom(room, c.stealNoneRoom)) {
		return time.Time{}, false
	}
	gap := c.stealGap
	if c.accepted != c.stealMark || gap == 0 {
		gap = c.cfg.StealEvery
	}
	return c.lastSteal.Add(gap), true
}

// sameRoom reports whether two rooms are the same to a thief: CPU,
// memory and whole free GPUs.
func sameRoom(a, b resource.Vector) bool {
	return a.CPU == b.CPU && a.Memory == b.Memory && a.FreeGPUs() == b.FreeGPUs()
}
