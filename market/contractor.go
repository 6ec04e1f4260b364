package market

import (
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/predict"
)

// contract is a task replica this node accepted: queued until it fits,
// then running until the runtime reports its exit.
type contract struct {
	spec    TaskSpec
	manager NodeID
	// awarder is the manager whose award this is; manager changes when
	// the job's tasks re-home, awarder never (tookAward knows a repeated
	// award by it).
	awarder    NodeID
	accepted   time.Time
	seq        uint64 // acceptance order, the last queue tie-breaker
	runtime    time.Duration
	beat       time.Time // last lease renewal sent
	preempt    bool
	alloc      resource.Allocation
	started    time.Time
	running    bool
	stopReason string // "preempted" or "cancelled" once a stop was issued
	ticket     []byte // the job's ticket, checked again at start (trust.go)
}

// contractor is the bidding and executing half of a node's market.
type contractor struct {
	*shared
	auc  *auctioneer
	gang *gangManager
	sp   *splits
	tix  *tickets

	lastSteal time.Time
	stealGap  time.Duration
	stealMark int // accepted at the last steal request
	// stealNone: the last look found no peer whose queue could give
	// this node anything, with room stealNoneRoom; no request until an
	// advert of a loaded peer comes or the room changes.
	stealNone     bool
	stealNoneRoom resource.Vector
	stolen        time.Time // when this node last asked for work to steal
	lastBeat      time.Time
	draining      bool

	capacity resource.Vector
	free     resource.Vector
	queue    []*contract
	// fsOrdered is the fair-share version the queue was last ordered by.
	fsOrdered uint64
	running   map[TaskKey]*contract
	seq       uint64
	runtime   *predict.Runtime
	load      *predict.Load
	runs      map[string][2]int // per job type: successes, runs
	holds     map[TaskKey]*hold
	reserves  map[string]*reservation
	results   []*pendingResult
	// resultsDue is no later than the earliest next of results: before
	// it repeatResults has nothing to do (a busy node keeps a minute of
	// finished tasks there, and Tick runs every 10 ms).
	resultsDue time.Time
	// resultOf indexes results by the attempt they report, for acks.
	resultOf map[resultID]*pendingResult
	accepted int // awards accepted so far
	// bids are the auctions this node bid in, and when: an award or hold
	// for any other is not this node's to take.
	bids map[AuctionID]bidMark
	// mix is the task mix this node has seen called for: its bids weigh
	// GPU fragmentation under it, and a GPU share goes to the card that
	// fragments least (frag.go).
	mix demandMix
	// head is the head as this node last computed it from its view
	// (head.go); headR the reservation it keeps for it when it makes its
	// shadow.
	head  *head
	headR *reservation
}

// resultID names the attempt a final report is about.
type resultID struct {
	key     TaskKey
	epoch   uint64
	attempt int
}

func newContractor(capv resource.Vector, rc predict.RuntimeConfig) *contractor {
	return &contractor{
		capacity: capv.Clone(), free: capv.Clone(), running: map[TaskKey]*contract{},
		runtime: predict.NewRuntime(rc), load: predict.NewLoad(0, 0), runs: map[string][2]int{},
		holds: map[TaskKey]*hold{}, reserves: map[string]*reservation{}, resultOf: map[resultID]*pendingResult{},
		bids: map[AuctionID]bidMark{},
	}
}

// wholeCapacity is the capacity with every GPU unallocated: what Fit uses
// to decide whether the node could ever run a request.
func (c *contractor) wholeCapacity() resource.Vector { return whole(c.capacity) }

// whole is a copy of capacity with every GPU unallocated.
func whole(capacity resource.Vector) resource.Vector {
	v := capacity.Clone()
	for i := range v.GPUs {
		v.GPUs[i].Free = resource.WholeGPU
	}
	return v
}

// couldHold is why a node (its site, labels, limit enforcement and
// capacity) could never run req, or "" when it could, given time.
func couldHold(site string, labels map[string]string, lim resource.Enforcement, capacity resource.Vector, req resource.Request) string {
	if why := resource.Constraints(site, labels, req); why != "" {
		return why
	}
	if why := lim.Refusal(req); why != "" {
		return why
	}
	_, why := resource.Fit(whole(capacity), req)
	return why
}

// predictRuntime is the runtime this node expects for an offer, inflated
// when the forecast load from outside Agora leaves less CPU: R / max(0.25,
// 1 − external), external = forecast load − Agora's reserved share.
func (c *contractor) predictRuntime(o TaskOffer, now time.Time) time.Duration {
	p := c.runtime.Predict(o.Type, o.Estimate).Runtime
	if c.capacity.CPU > 0 {
		reserved := 1 - float64(c.free.CPU)/float64(c.capacity.CPU)
		external := c.load.Forecast(now) - reserved
		if external > 0 {
			p = time.Duration(float64(p) / max(0.25, 1-external))
		}
	}
	return max(p, time.Millisecond)
}

// endOf is when a running contract is predicted to end: its start plus
// its predicted runtime, or just after now if it overran.
func endOf(k *contract, now time.Time) time.Time {
	e := k.started.Add(k.runtime)
	if !e.After(now) {
		e = now.Add(time.Millisecond)
	}
	return e
}

// predictStart simulates the node's schedule — running tasks ending at
// their predicted times, queued tasks that sort ahead of the offer started
// as they fit without delaying the first that waits (as schedule does) —
// and returns the first time the offer would start.
func (c *contractor) predictStart(o TaskOffer, now time.Time) time.Time {
	free := c.free.Clone()
	probe := &contract{spec: TaskSpec{TaskOffer: o, Owner: c.ownerOf(o.Key.Job)}, seq: c.seq + 1, accepted: now}
	var pending []*contract
	for _, k := range c.queue {
		if c.ahead(k, probe) {
			pending = append(pending, k)
		}
	}
	// Reservations: a gang replica only counts the reservations ahead of
	// its own; a plain task fits beside them all, or backfills when it
	// ends before they can be honoured.
	gang := ""
	if o.GangSize > 1 {
		gang = gangID(o.Key.Job, o.Key.Task)
	}
	roomAt := c.reservedRoomAt(now)
	fits := func(free resource.Vector, req resource.Request, at time.Time, rt time.Duration) (resource.Allocation, bool) {
		if len(c.reserves) == 0 && !c.headKnown() {
			al, why := resource.Fit(free, req)
			return al, why == ""
		}
		v, _ := c.minusReserves(free.Clone(), gang)
		if al, why := resource.Fit(v, req); why == "" {
			return al, true
		}
		if c.headKnown() {
			rt = upperRuntime(rt, o.Estimate)
		}
		if gang != "" || at.Add(rt).After(roomAt) {
			return resource.Allocation{}, false
		}
		al, why := resource.Fit(free, req)
		return al, why == ""
	}
	rt := c.predictRuntime(o, now)
	// Nothing queued ahead and room now: the offer starts now, whatever
	// the running tasks' ends (the common case on a node with room; it
	// spares sorting them for every bid).
	if len(pending) == 0 {
		if _, ok := fits(free, o.Request, now, rt); ok {
			return now
		}
	}
	evs := c.runningEnds(now)
	for _, h := range c.holds { // a hold either starts its replica or expires
		evs = append(evs, release{now.Add(max(h.k.runtime, time.Millisecond)), h.k.spec.Request, h.k.alloc})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	insert := func(e release) {
		i := sort.Search(len(evs), func(i int) bool { return evs[i].at.After(e.at) })
		evs = append(evs, release{})
		copy(evs[i+1:], evs[i:])
		evs[i] = e
	}
	t := now
	for {
		rest := pending[:0:0]
		var guard *headGuard // as schedule: nothing delays the first that waits
		for _, k := range pending {
			al, ok := fits(free, k.spec.Request, t, k.runtime)
			if ok && guard != nil && !guard.admits(k.spec.Request, al, t.Add(k.runtime)) {
				ok = false
			} else if !ok && guard == nil {
				head := k
				guard = newHeadGuard(t, free, evs, func(v resource.Vector) bool {
					_, ok := fits(v, head.spec.Request, t, head.runtime)
					return ok
				})
			}
			if ok {
				free.Take(k.spec.Request, al)
				insert(release{t.Add(k.runtime), k.spec.Request, al})
			} else {
				rest = append(rest, k)
			}
		}
		pending = rest
		if al, ok := fits(free, o.Request, t, rt); ok && (guard == nil || guard.admits(o.Request, al, t.Add(rt))) {
			return t
		}
		if len(evs) == 0 {
			// Only reservations stand in the way, and they outlast every
			// prediction: a day is as good as never for a bid.
			return t.Add(24 * time.Hour)
		}
		t = evs[0].at
		for len(evs) > 0 && !evs[0].at.After(t) {
			free.Give(evs[0].req, evs[0].al)
			evs = evs[1:]
		}
	}
}

// victims picks running tasks of priority at most p − margin to evict so
// that req fits now: lowest priority first, most recently started first.
// It returns nil when eviction cannot make room.
func (c *contractor) victims(req resource.Request, p, margin int) []*contract {
	var cands []*contract
	for _, k := range c.running {
		if k.stopReason == "" && k.spec.Priority <= p-margin {
			cands = append(cands, k)
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.spec.Priority != b.spec.Priority {
			return a.spec.Priority < b.spec.Priority
		}
		if !a.started.Equal(b.started) {
			return a.started.After(b.started)
		}
		return a.spec.Key.String() < b.spec.Key.String()
	})
	free := c.free.Clone()
	for _, k := range c.running {
		if k.stopReason != "" { // already being stopped: count it as gone
			free.Give(k.spec.Request, k.alloc)
		}
	}
	var out []*contract
	for _, k := range cands {
		if _, why := resource.Fit(free, req); why == "" {
			return out
		}
		free.Give(k.spec.Request, k.alloc)
		out = append(out, k)
	}
	if _, why := resource.Fit(free, req); why == "" {
		return out
	}
	return nil
}

// successRate is (ok+1)/(runs+2) for a job type.
func (c *contractor) successRate(jobType string) float64 {
	r := c.runs[jobType]
	return float64(r[0]+1) / float64(r[1]+2)
}

// enqueue inserts an accepted contract in queue order.
func (c *contractor) enqueue(k *contract) {
	if o := k.spec.Owner; o != "" && c.fs != nil {
		c.fs.NoteShare(o, c.shareOf(k.spec.Key.Job))
	}
	c.seq++
	k.seq = c.seq
	i := sort.Search(len(c.queue), func(i int) bool { return c.ahead(k, c.queue[i]) })
	c.queue = append(c.queue, nil)
	copy(c.queue[i+1:], c.queue[i:])
	c.queue[i] = k
}

func (c *contractor) dequeue(key TaskKey) *contract {
	for i, k := range c.queue {
		if k.spec.Key == key {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			return k
		}
	}
	return nil
}

// Bid bookkeeping: what an award or hold must answer.
const (
	// bidMemory is how long a bid is remembered; awards come within the
	// award timeout of the round's close.
	bidMemory = 30 * time.Second
	// bidsPruneAt is the count of remembered bids at which old ones are
	// dropped.
	bidsPruneAt = 4096
)

// bidMark is a remembered bid: when it was made, and whether an award
// spent it.
type bidMark struct {
	at    time.Time
	spent bool
}

// madeBid records that this node bid in an auction. A bid an award spent
// stays spent: a repeat of the call for bids (the network delivered it
// twice) must not make the repeat of an award this node declined
// acceptable — the manager gave that epoch to the next bidder (the fault
// campaign's seed 16188 started one attempt on two nodes).
func (c *contractor) madeBid(id AuctionID, now time.Time) {
	if len(c.bids) >= bidsPruneAt {
		for a, b := range c.bids {
			if now.Sub(b.at) > bidMemory {
				delete(c.bids, a)
			}
		}
	}
	if b, ok := c.bids[id]; ok && b.spent {
		return
	}
	c.bids[id] = bidMark{at: now}
}

// bidFor reports whether this node bid in an auction within bidMemory and
// no award spent the bid; consume spends it (a single task's auction is
// awarded once; a packed gang may hold several replicas on one bidder).
func (c *contractor) bidFor(id AuctionID, now time.Time, consume bool) bool {
	b, ok := c.bids[id]
	if ok && consume {
		c.bids[id] = bidMark{at: b.at, spent: true}
	}
	return ok && !b.spent && now.Sub(b.at) <= bidMemory
}

// working reports whether the contractor holds work of job: a task
// queued, running or held, or a final report its manager has not
// acknowledged.
func (c *contractor) working(job string) bool {
	for _, k := range c.running {
		if k.spec.Key.Job == job {
			return true
		}
	}
	for _, k := range c.queue {
		if k.spec.Key.Job == job {
			return true
		}
	}
	for _, h := range c.holds {
		if h.k.spec.Key.Job == job {
			return true
		}
	}
	for _, r := range c.results {
		if r.st.Key.Job == job && !r.acked {
			return true
		}
	}
	return false
}
