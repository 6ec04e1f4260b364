package market

import (
	"fmt"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// hold is resources a contractor set aside for a gang replica.
type hold struct {
	k       *contract
	expires time.Time
}

// reservation keeps room for a starving gang replica.
type reservation struct {
	gang     string
	req      resource.Request
	priority int
	owner    string    // the gang's job's owner, when known (the head's): its fair share orders it
	since    time.Time // when the gang became ready; zero: unknown
	until    time.Time
	manager  NodeID // who asked for it: it lapses when that node is gone or restarts
}

// gangSlots is how many replicas of a gang offer fit here now (at most one
// unless the gang may pack), counting other gangs' reservations as taken
// unless the gang ends by the head's shadow time (head.go: it backfills).
func (c *contractor) gangSlots(o TaskOffer, now time.Time) int {
	free := c.availFor(gangID(o.Key.Job, o.Key.Task))
	if c.lends(c.predictRuntime(o, now), o.Estimate, now) {
		free = c.free.Clone()
	}
	n := 0
	for n < o.GangSize {
		al, why := resource.Fit(free, o.Request)
		if why != "" {
			break
		}
		free.Take(o.Request, al)
		n++
		if !o.Pack {
			break
		}
	}
	return n
}

// availFor is what is free for a task of the given gang ("" for none):
// free minus the reservations that come first (see minusReserves).
func (c *contractor) availFor(gang string) resource.Vector {
	v, _ := c.minusReserves(c.free.Clone(), gang)
	return v
}

// minusReserves takes from free the reservations a task of the given gang
// ("" for none) must leave alone, and returns it. Reservations are
// honoured in one order on every node — higher priority first, then by
// gang ID — and a gang that holds a reservation here is only charged for
// those ahead of its own. Two starving gangs that reserved the same nodes
// thus cannot block each other forever: the first in that order gets the
// room on every node it reserved. When free cannot honour them all,
// nothing is left and ok is false.
func (c *contractor) minusReserves(free resource.Vector, gang string) (v resource.Vector, ok bool) {
	if c.headKnown() {
		// The head's reservation, computed from the adverts, is the only
		// one (head.go): EASY protects one head.
		r := c.headRes()
		if r == nil || r.gang == gang {
			return free, true
		}
		if al, why := resource.Fit(free, r.req); why == "" {
			free.Take(r.req, al)
			return free, true
		}
		return resource.Vector{GPUs: free.GPUs[:0]}, false
	}
	if len(c.reserves) == 0 {
		return free, true
	}
	rs := make([]*reservation, 0, len(c.reserves))
	for _, r := range c.reserves {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return c.reservedBefore(rs[i], rs[j]) })
	own := c.reserves[gang]
	for _, r := range rs {
		if r.gang == gang || (own != nil && !c.reservedBefore(r, own)) {
			continue
		}
		if al, why := resource.Fit(free, r.req); why == "" {
			free.Take(r.req, al)
		} else {
			return resource.Vector{GPUs: free.GPUs[:0]}, false
		}
	}
	return free, true
}

// reservedRoomAt is when the running tasks, ending at their predicted
// times, leave room for every reservation: until then a task that ends
// in time may use the reserved room (backfilling, as EASY does). It is
// the zero time when there are no reservations, and far in the future
// when releases alone never make room (the reservations then block
// nothing).
func (c *contractor) reservedRoomAt(now time.Time) time.Time {
	if c.headKnown() {
		if c.headRes() == nil {
			return time.Time{}
		}
		return c.head.shadow
	}
	if len(c.reserves) == 0 {
		return time.Time{}
	}
	at, _ := c.roomWhen(now, func(free resource.Vector) bool {
		_, ok := c.minusReserves(free, "")
		return ok
	})
	return at
}

// roomWhen walks the running tasks' predicted ends in order and returns
// the first time at which ok holds of the free room (now if it holds
// already), with the room then; far in the future when it never does. ok
// may change the vector it is given.
func (c *contractor) roomWhen(now time.Time, ok func(resource.Vector) bool) (time.Time, resource.Vector) {
	free := c.free.Clone()
	if ok(free.Clone()) {
		return now, free
	}
	ks := make([]*contract, 0, len(c.running))
	for _, k := range c.running {
		ks = append(ks, k)
	}
	sortByEnd(ks, now)
	for _, k := range ks {
		free.Give(k.spec.Request, k.alloc)
		if ok(free.Clone()) {
			return endOf(k, now), free
		}
	}
	return now.Add(farFuture), free
}

// sortByEnd orders contracts by predicted end, then acceptance.
func sortByEnd(ks []*contract, now time.Time) {
	sort.Slice(ks, func(i, j int) bool {
		a, b := endOf(ks[i], now), endOf(ks[j], now)
		if !a.Equal(b) {
			return a.Before(b)
		}
		return ks[i].seq < ks[j].seq
	})
}

// farFuture stands for "never" in predictions.
const farFuture = 100 * 365 * 24 * time.Hour

// canStart reports whether a plain task of predicted runtime rt may take
// req now: it fits beside the reservations, or it fits in the free room
// and ends before the reservations can be honoured (backfill). roomAt is
// reservedRoomAt's answer.
func (c *contractor) canStart(req resource.Request, rt, est time.Duration, now, roomAt time.Time) (resource.Allocation, bool) {
	if al, why := c.mix.fit(c.availFor(""), req); why == "" {
		return al, true
	}
	if c.headKnown() {
		rt = upperRuntime(rt, est)
	}
	if roomAt.IsZero() || now.Add(rt).After(roomAt) {
		return resource.Allocation{}, false
	}
	al, why := c.mix.fit(c.free, req)
	return al, why == ""
}

// reservedBefore orders reservations: higher priority; then, between
// gangs of two known owners whose fair-share factors differ, the higher
// multifactor priority (gangAhead); then the earlier ready time; then
// gang ID.
func (sh *shared) reservedBefore(a, b *reservation) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if d := sh.gangAhead(a.owner, b.owner, a.since, b.since); d != 0 {
		return d > 0
	}
	if !a.since.Equal(b.since) {
		if a.since.IsZero() || b.since.IsZero() {
			return b.since.IsZero()
		}
		return a.since.Before(b.since)
	}
	return a.gang < b.gang
}

func (c *contractor) onHold(h Hold) {
	key := h.Task.Key
	reply := HoldReply{Auction: h.Auction, Bidder: c.cfg.Self, Replica: key.Replica}
	if c.draining {
		reply.Reason = "node draining"
		c.send(h.Manager, reply)
		return
	}
	task, why := c.tix.mayHold(h)
	if why != "" {
		reply.Reason = why
		c.send(h.Manager, reply)
		return
	}
	h.Task = task
	if _, busy := c.running[key]; busy || c.queued(key) || c.holds[key] != nil {
		reply.Reason = "already holds this replica"
		c.send(h.Manager, reply)
		return
	}
	c.gang.refreshHead()
	free := c.availFor(gangID(key.Job, key.Task))
	if c.lends(c.predictRuntime(h.Task.TaskOffer, c.now), h.Task.Estimate, c.now) {
		free = c.free.Clone() // ends by the head's shadow: backfills
	}
	al, why := resource.Fit(free, h.Task.Request)
	if why != "" {
		reply.Reason = "no room now: " + why
		c.send(h.Manager, reply)
		return
	}
	c.free.Take(h.Task.Request, al)
	k := &contract{spec: h.Task, manager: h.Manager, awarder: h.Manager, accepted: c.now, alloc: al, runtime: c.predictRuntime(h.Task.TaskOffer, c.now)}
	// Never trust a manager's clock further than our own limit.
	c.holds[key] = &hold{k: k, expires: minTime(h.Expires, c.now.Add(c.cfg.HoldExpiry))}
	reply.OK = true
	c.send(h.Manager, reply)
}

func (c *contractor) onCommit(from NodeID, cm Commit) {
	h := c.holds[cm.Key]
	if h == nil || h.k.spec.Epoch != cm.Epoch || from != h.k.manager {
		c.event(cm.Key.Job, fmt.Sprintf("%s: commit for a hold not held (epoch %d)", cm.Key, cm.Epoch))
		return
	}
	delete(c.holds, cm.Key)
	for id, r := range c.reserves {
		if r.gang == gangID(cm.Key.Job, cm.Key.Task) {
			delete(c.reserves, id)
		}
	}
	k := h.k
	k.spec.Rank, k.spec.Peers = cm.Rank, cm.Peers
	k.started, k.running, k.beat = c.now, true, c.now
	c.running[cm.Key] = k
	c.emit(StartTask{Task: k.spec, Alloc: k.alloc, Manager: k.manager})
	c.send(k.manager, TaskStatus{Key: cm.Key, Epoch: cm.Epoch, Attempt: k.spec.Attempt, Node: c.cfg.Self, State: TaskRunning, Time: c.now})
}

func (c *contractor) onRelease(from NodeID, r Release) {
	if h := c.holds[r.Key]; h != nil && h.k.spec.Epoch == r.Epoch && from == h.k.manager {
		delete(c.holds, r.Key)
		c.free.Give(h.k.spec.Request, h.k.alloc)
		c.schedule()
	}
}

func (c *contractor) onReserve(from NodeID, r Reserve) {
	id := gangID(r.Auction.Key.Job, r.Auction.Key.Task)
	if !r.Until.After(c.now) {
		if o := c.reserves[id]; o != nil && o.manager == from {
			delete(c.reserves, id)
			c.schedule()
		}
		return
	}
	nr := &reservation{gang: id, req: r.Request, priority: r.Priority, since: r.Since, until: minTime(r.Until, c.now.Add(c.cfg.ReserveTTL)), manager: from}
	// One reservation per node, the first in the shared order, as EASY
	// protects only the head of its queue: with every waiting gang
	// reserving, nodes would idle behind reservations that are hours from
	// being honoured. A gang turned away here keeps its turn by renewing.
	for oid, o := range c.reserves {
		if oid == id {
			continue
		}
		if c.reservedBefore(o, nr) {
			return
		}
		delete(c.reserves, oid)
	}
	c.reserves[id] = nr
}

// managerLost drops the reservations node id asked for: it is gone or
// restarted, so nothing renews or releases them. Without this a dead
// manager's reservation kept its room until ReserveTTL, which therefore
// had to be short, and renewing it every third of that for gangs that
// wait hours was most of a replay's messages.
func (c *contractor) managerLost(id NodeID) {
	changed := false
	for g, r := range c.reserves {
		if r.manager == id {
			delete(c.reserves, g)
			changed = true
		}
	}
	if changed {
		c.schedule()
	}
}

// expireHolds gives back holds and reservations past their expiry.
func (c *contractor) expireHolds() {
	changed := false
	keys := make([]TaskKey, 0, len(c.holds))
	for k := range c.holds {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		h := c.holds[k]
		if !c.now.Before(h.expires) {
			delete(c.holds, k)
			c.free.Give(h.k.spec.Request, h.k.alloc)
			c.event(k.Job, fmt.Sprintf("%s: hold expired", k))
			changed = true
		}
	}
	for id, r := range c.reserves {
		if !c.now.Before(r.until) {
			delete(c.reserves, id)
			changed = true
		}
	}
	if changed {
		c.schedule()
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// nextHoldExpiry is when expireHolds next has work: a gang hold or a
// reservation expiring.
func (c *contractor) nextHoldExpiry() (at time.Time, ok bool) {
	for _, h := range c.holds {
		if !ok || h.expires.Before(at) {
			at, ok = h.expires, true
		}
	}
	for _, r := range c.reserves {
		if !ok || r.until.Before(at) {
			at, ok = r.until, true
		}
	}
	return at, ok
}
