package market

import (
	"math"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// The head reservation: EASY backfilling's protection of its queue head,
// computed by every node from the adverts instead of by a master.
//
// Each manager advertises the first of the wide gangs (Config.HeadWidth;
// by default every gang) it is placing that has waited longer than
// GangReserveAfter, or of any gang that has waited HeadAfter
// (WaitingGang). Every node takes the first of those it sees,
// in the reservation order (priority, then the time the gang became
// ready, then its ID): the head. Every node also advertises when it will
// have room for a replica of that head by the upper bounds of its
// running tasks' runtimes (their estimates, as EASY uses; HeadRoom).
// From these each node computes, alike, the head's shadow time — the
// size-th earliest of those room times — and the nodes that make it: of
// the nodes with room by then, the size whose room comes last (EASY's
// reservation "preferring nodes that will be released"; the earlier ones
// are its extra processors). A node among them keeps room for a
// replica of the head: it starts a task that would take it only if the
// task's upper bound ends by the shadow time. Every other node works as
// if there were no head. As in EASY, the shadow moves at every event (a
// task ending before its bound, an advert), and the head starts as soon
// as its nodes have room: its manager looks at its view on every advert
// while it is the head.

// WaitingGang is what a manager's adverts say of the first gang it is
// placing that is a head candidate (Waiting): the zero value
// when none.
type WaitingGang struct {
	Gang     string // "job/task"
	Size     int
	Request  resource.Request
	Priority int
	Since    time.Time // when its replicas became ready
	// Owner is its job's owner (a network with an authority; empty
	// otherwise): every node orders the candidates by the owners' fair
	// share too (gangAhead).
	Owner string
}

// HeadRoom is what a node's adverts say of the head it sees: when it will
// have room for one of its replicas, by the upper bounds of its running
// tasks' runtimes (the zero time: now), or Never. The zero value when it
// sees no head.
type HeadRoom struct {
	Gang  string
	At    time.Time
	Never bool
}

// Equal reports whether h and o say the same.
func (h HeadRoom) Equal(o HeadRoom) bool {
	return h.Gang == o.Gang && h.Never == o.Never && h.At.Equal(o.At)
}

// head is a node's view of the head: the gang, its shadow time, and
// whether this node is one of the nodes that make it.
type head struct {
	WaitingGang
	shadow time.Time
	known  bool // the shadow time is known: size nodes said their room times
	mine   bool
}

// waitingBefore orders waiting gangs as reservations are ordered.
func (sh *shared) waitingBefore(a, b WaitingGang) bool {
	return sh.reservedBefore(&reservation{gang: a.Gang, priority: a.Priority, owner: a.Owner, since: a.Since},
		&reservation{gang: b.Gang, priority: b.Priority, owner: b.Owner, since: b.Since})
}

// gangAhead compares two gangs of one priority by their owners' fair
// share, as the contractors' queues compare tasks (multifactor): > 0
// when the first goes ahead, < 0 when the second does, 0 when the fair
// share does not tell them apart — an owner unknown (an open network, a
// Reserve, which names none) or equal factors. The age term is the
// difference of their ready times over MaxAge, which, unlike ages, does
// not move with the clock: every node orders a pair alike until a
// factor changes (fairshare.Book.Version). It is not capped, as the
// contractors' age is, so that the order is that of one number per
// gang, FairShare·F − Age·ready/MaxAge: transitive, and the first gang
// of a set is the same whatever order it is read in (docs/scheduling.md,
// "Gangs").
func (sh *shared) gangAhead(ownerA, ownerB string, sinceA, sinceB time.Time) float64 {
	if sh == nil || sh.fs == nil || ownerA == "" || ownerB == "" || ownerA == ownerB {
		return 0
	}
	fa, fb := sh.fs.Factor(sh.now, ownerA), sh.fs.Factor(sh.now, ownerB)
	if fa == fb {
		return 0
	}
	w := sh.cfg.FairShare
	d := w.FairShare * (fa - fb)
	if !sinceA.IsZero() && !sinceB.IsZero() && w.MaxAge > 0 {
		d += w.Age * float64(sinceB.Sub(sinceA)) / float64(w.MaxAge)
	}
	return d
}

// waiting is the first wide gang this node is placing, in the
// reservation order, that has waited longer than GangReserveAfter — or
// a gang of any width that has waited HeadAfter (starving) — for its
// adverts. Packing gangs are left out: their replicas need not find
// distinct nodes.
func (gs *gangManager) waiting() WaitingGang {
	var first WaitingGang
	for id, g := range gs.gangs {
		if g.pack || gs.now.Sub(g.ready) < gs.cfg.GangReserveAfter || !gs.wide(g) && !gs.starving(g.ready) {
			continue
		}
		w := WaitingGang{Gang: id, Size: g.size, Request: g.offer.Request, Priority: g.offer.Priority, Since: g.ready, Owner: g.owner}
		if first.Gang == "" || gs.waitingBefore(w, first) {
			first = w
		}
	}
	return first
}

// DefaultHeadAfter is Config.HeadAfter's default: two days. Shorter
// bounds made heads of ordinary gangs (the synthetic mix's 2–8-GPU
// gangs at 24 h) and raised everyone else's waits; three days left
// SDSC's 33–64-processor jobs, never wide on 128 nodes, waiting 1.7×
// EASY's and the whole log's mean wait over EASY's (docs/scheduling.md).
const DefaultHeadAfter = 48 * time.Hour

// starving reports whether a gang ready since since has waited long
// enough to be a head candidate whatever its width (Config.HeadAfter).
func (gs *gangManager) starving(since time.Time) bool {
	return gs.cfg.HeadAfter > 0 && gs.now.Sub(since) >= gs.cfg.HeadAfter
}

// wide reports whether gang g needs more than HeadWidth of the nodes of
// the view that could hold a replica, as the view was when first asked.
func (gs *gangManager) wide(g *gangAuction) bool {
	if g.wide == 0 {
		_, capable := gs.viewRoom(g)
		g.wide = -1
		if float64(g.size) > gs.cfg.HeadWidth*float64(capable) {
			g.wide = 1
		}
	}
	return g.wide > 0
}

// HeadRoom is when this node will have room for a replica of the head it
// sees, for its adverts.
func (m *Market) HeadRoom() HeadRoom {
	m.gang.refreshHead()
	h := m.con.head
	if h == nil {
		return HeadRoom{}
	}
	at := m.con.roomForHead(h.WaitingGang)
	if !at.Before(farTime) {
		return HeadRoom{Gang: h.Gang, Never: true}
	}
	return HeadRoom{Gang: h.Gang, At: at}
}

// refreshHead computes the head again if anything happened since it was
// last computed.
func (gs *gangManager) refreshHead() {
	if !gs.headStale {
		return
	}
	gs.headStale = false
	gs.con.head = gs.findHead()
}

// findHead is the head as this node sees it: the first waiting gang of
// the view that enough nodes could ever hold, with its shadow time;
// nil when there is none. It runs at every advert, and a stretch of a
// long SWF replay has a hundred peers each naming a waiting gang: the
// first is kept as adverts come (headInputs.first), and the others are
// taken in order by repeated selection, not sorted, only when it does not
// make the head.
func (gs *gangManager) findHead() *head {
	own := gs.waiting()
	if v := gs.fs.Version(); v != gs.hin.fsVersion {
		gs.hin.firstOK, gs.hin.fsVersion = false, v // the factors changed: so may the order
	}
	first := gs.hin.firstWaiting(gs.waitingBefore)
	if own.Gang != "" && (first.Gang == "" || gs.waitingBefore(own, first)) {
		first = own
	}
	if first.Gang == "" {
		return nil
	}
	if h := gs.shadowOf(first); h != nil {
		return h
	}
	tried := &first // the last candidate tried: every one ordered before it was too
	for {
		var next WaitingGang
		consider := func(w WaitingGang) {
			if tried != nil && !gs.waitingBefore(*tried, w) {
				return
			}
			if next.Gang == "" || gs.waitingBefore(w, next) {
				next = w
			}
		}
		if own.Gang != "" {
			consider(own)
		}
		for _, w := range gs.hin.waiting {
			consider(w)
		}
		if next.Gang == "" {
			return nil
		}
		if h := gs.shadowOf(next); h != nil {
			return h
		}
		tried = &next
	}
}

// shadowOf computes gang w's shadow time and whether this node makes it,
// or nil when fewer than w.Size nodes of the view could ever hold a
// replica, or w is neither wide in this view nor starving. The shadow is
// unknown (known false) when fewer than w.Size nodes can say when they
// will have room. It runs at every change of the view, so it reads the
// room times the peers' adverts gave, kept in order (headInputs), with a
// few binary searches instead of a pass over the view.
//
// Room times are raised to now (a past one means room now), which keeps
// their order: the shadow is the size-th smallest of the raw times, this
// node's own among them, raised to now. This node makes the shadow when
// its room comes by the shadow time and fewer than size of the nodes
// with room by then come after it, by raised time and then by ID (keeps).
func (gs *gangManager) shadowOf(w WaitingGang) *head {
	hi := gs.headInputsFor(w)
	now := gs.now.UnixNano()
	self := int64(-1)
	if roughFit(gs.con.capacity, w.Request) && couldHold(gs.cfg.Site, gs.cfg.Labels, gs.cfg.Limits, gs.con.capacity, w.Request) == "" {
		self = max(nanos(gs.con.roomForHead(w)), now)
	}
	n := len(hi.order)
	if self >= 0 {
		n++
	}
	if n < w.Size || float64(w.Size) <= gs.cfg.HeadWidth*float64(n) && !gs.starving(w.Since) {
		return nil
	}
	const far = int64(math.MaxInt64)
	k := w.Size - 1
	var shadow int64
	if self < 0 {
		shadow = hi.order[k].at
	} else {
		switch p := hi.countBefore(self, ""); {
		case k < p:
			shadow = hi.order[k].at
		case k == p:
			shadow = self
		default:
			shadow = hi.order[k-1].at
		}
	}
	if shadow >= far {
		return &head{WaitingGang: w} // room times unknown: nobody keeps room
	}
	shadow = max(shadow, now)
	return &head{WaitingGang: w, shadow: time.Unix(0, shadow), known: true, mine: self >= 0 && hi.keeps(self, shadow, now, gs.cfg.Self, w.Size)}
}

// shadowSlack is how much later than the shadow time a node's room may
// come and still count as by it (keeps): the replicas of a gang that
// ends at the shadow started a round trip apart, and their bounds end as
// far apart, but they free together as far as the head is concerned.
const shadowSlack = time.Second

// keeps reports whether this node, of raised room time self, is one of
// the size nodes that keep room for the head: of
// the nodes with room by the shadow time (give or take shadowSlack), the
// size that come last (by room time, then ID). The others are EASY's
// extra processors — more than size nodes have room by the shadow when
// several free at its instant, as a wide job's nodes do when it ends —
// and they come first, most often idle now: they run whatever they like,
// a job longer than the shadow included, while the nodes that free just
// before it keep the head's room. Keeping the earliest instead left those
// idle nodes empty until the shadow time while long jobs waited (EASY
// reserves "preferring nodes that will be released").
func (hi *headInputs) keeps(self, shadow, now int64, selfID NodeID, size int) bool {
	if self > shadow+int64(shadowSlack) {
		return false // its room comes after the shadow time
	}
	by := hi.countBefore(shadow+int64(shadowSlack)+1, "") // peers with room by the shadow time
	extra := by + 1 - size                                // nodes by the shadow, this one included, beyond the head's
	if extra <= 0 {
		return true
	}
	// This node keeps room when at least extra peers come before it.
	return hi.before(self, now, selfID, extra) >= extra
}

// nanos is t in Unix nanoseconds: 0 for the zero time (room now),
// MaxInt64 for farTime and later (never).
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case !t.Before(farTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// roomForHead is when this node will have room for a replica of gang w
// (boundedRoomAt), or never when a task queued here came before the
// gang — a higher priority, or accepted before the gang was ready: that
// task is this node's own head, which the gang must not overtake (EASY's
// queue is first come, first served across jobs of every width).
func (c *contractor) roomForHead(w WaitingGang) time.Time {
	for _, k := range c.queue {
		if k.spec.Priority > w.Priority || k.spec.Priority == w.Priority && k.accepted.Before(w.Since) {
			return farTime
		}
	}
	return c.boundedRoomAt(w.Request)
}

// boundedRoomAt is when the running tasks, ending by the upper bounds of
// their runtimes, leave room for req: the zero time if there is room now,
// a time past if a task has run past its bound. It moves only when the
// node's tasks do, so adverts that carry it go out only then. Holds end
// at once: they start their replica or expire.
func (c *contractor) boundedRoomAt(req resource.Request) time.Time {
	free := c.free.Clone()
	for _, h := range c.holds {
		free.Give(h.k.spec.Request, h.k.alloc)
	}
	if _, why := resource.Fit(free, req); why == "" {
		return time.Time{}
	}
	ks := make([]*contract, 0, len(c.running))
	for _, k := range c.running {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := boundedEnd(ks[i]), boundedEnd(ks[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return ks[i].seq < ks[j].seq
	})
	for _, k := range ks {
		free.Give(k.spec.Request, k.alloc)
		if _, why := resource.Fit(free, req); why == "" {
			return boundedEnd(k)
		}
	}
	return farTime
}

// boundedEnd is when a running contract ends at the latest: by its
// estimate, or its prediction when that is longer or there is none.
func boundedEnd(k *contract) time.Time {
	return k.started.Add(upperRuntime(k.runtime, k.spec.Estimate))
}

// farTime stands for "never" in room times.
var farTime = time.Unix(1<<40, 0)

// upperRuntime is the runtime a task is taken to need at most when it
// would use a head's reserved room: the user's estimate (EASY's bound),
// or the prediction when that is longer or there is no estimate.
func upperRuntime(predicted, estimate time.Duration) time.Duration {
	return max(predicted, estimate)
}

// headRes is the reservation a node that makes the head's shadow keeps,
// nil when it makes none.
func (c *contractor) headRes() *reservation {
	if c.head == nil || !c.head.known || !c.head.mine {
		return nil
	}
	if c.headR == nil || c.headR.gang != c.head.Gang {
		c.headR = &reservation{gang: c.head.Gang, req: c.head.Request, priority: c.head.Priority, owner: c.head.Owner, since: c.head.Since}
	}
	return c.headR
}

// lends reports whether a task of predicted runtime rt and estimate est,
// starting now, may take the room this node keeps for the head: it ends
// by the head's shadow time at the latest.
func (c *contractor) lends(rt, est time.Duration, now time.Time) bool {
	h := c.head
	return h != nil && h.known && h.mine && !now.Add(upperRuntime(rt, est)).After(h.shadow)
}

// headKnown reports whether this node sees a head whose shadow time is
// known: its reservation then replaces those Reserve messages asked for.
func (c *contractor) headKnown() bool {
	return c.head != nil && c.head.known
}

// headMoved follows a change of the view: when the head, its shadow time
// or this node's part in it changed, queued tasks may start (or must
// not); and the head's manager looks at once when its view shows the
// head room, as EASY starts its head at the event that frees its nodes.
func (gs *gangManager) headMoved() {
	if len(gs.con.queue) == 0 && len(gs.gangs) == 0 {
		return // computed when needed
	}
	old := gs.con.head
	gs.refreshHead()
	h := gs.con.head
	if h == nil {
		if old != nil && len(gs.con.queue) > 0 {
			gs.con.schedule()
		}
		return
	}
	if len(gs.con.queue) > 0 && (old == nil || old.Gang != h.Gang || old.known != h.known || old.mine != h.mine || !old.shadow.Equal(h.shadow)) {
		gs.con.schedule()
	}
	g := gs.gangs[h.Gang]
	if g == nil || g.holding || g.nextAt.IsZero() || !gs.now.Before(g.nextAt) {
		return
	}
	gs.dl.retimeGang(h.Gang)
	if room, _ := gs.viewRoom(g); room >= g.size {
		g.nextAt = gs.now
	}
}

// roughFit is a quick necessary condition of resource.Fit, which builds
// its reason: CPU and memory.
func roughFit(v resource.Vector, req resource.Request) bool {
	return v.CPU >= req.CPU && v.Memory >= req.Memory
}

// freeFor is the room a node with free room free that keeps room for
// reservation r offers to a task of offer o: beside the reservation,
// unless o is that gang, or ends by the head's shadow time by its
// estimate (it may use the head's room).
func (gs *gangManager) freeFor(o TaskOffer, free resource.Vector, r ReservedRoom) resource.Vector {
	if r.Gang == "" || o.GangSize > 1 && r.Gang == gangID(o.Key.Job, o.Key.Task) {
		return free
	}
	if h := gs.con.head; h != nil && h.known && r.Gang == h.Gang && o.Estimate > 0 && !gs.now.Add(o.Estimate).After(h.shadow) {
		return free
	}
	return r.Unreserved
}

// reserved is the gang reservation this node honours first and the room
// beside every reservation it honours, for its adverts; the zero value
// when it holds none.
func (gs *gangManager) reserved() ReservedRoom {
	c := gs.con
	gs.refreshHead()
	if c.headKnown() {
		if r := c.headRes(); r != nil {
			return ReservedRoom{Gang: r.gang, Unreserved: c.availFor("")}
		}
		return ReservedRoom{}
	}
	var first *reservation
	for _, r := range c.reserves {
		if first == nil || c.reservedBefore(r, first) {
			first = r
		}
	}
	if first == nil {
		return ReservedRoom{}
	}
	return ReservedRoom{Gang: first.gang, Unreserved: c.availFor("")}
}

// predictedWait is how long a new one-core task would wait here.
func (gs *gangManager) predictedWait(now time.Time) time.Duration {
	gs.refreshHead()
	o := TaskOffer{Request: resource.Request{CPU: min(1000, gs.con.capacity.CPU)}}
	return max(gs.con.predictStart(o, now).Sub(now), 0)
}
