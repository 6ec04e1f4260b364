package market

import (
	"fmt"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/predict"
)

// contract is a task replica this node accepted: queued until it fits,
// then running until the runtime reports its exit.
type contract struct {
	spec       TaskSpec
	manager    NodeID
	accepted   time.Time
	seq        uint64 // acceptance order, the last queue tie-breaker
	runtime    time.Duration
	beat       time.Time // last lease renewal sent
	preempt    bool
	alloc      resource.Allocation
	started    time.Time
	running    bool
	stopReason string // "preempted" or "cancelled" once a stop was issued
}

// ahead reports whether a sorts before b in the queue: higher priority,
// then earlier deadline (none is latest), then earlier acceptance.
func ahead(a, b *contract) bool {
	if a.spec.Priority != b.spec.Priority {
		return a.spec.Priority > b.spec.Priority
	}
	ad, bd := a.spec.Deadline, b.spec.Deadline
	if !ad.Equal(bd) {
		if ad.IsZero() {
			return false
		}
		if bd.IsZero() {
			return true
		}
		return ad.Before(bd)
	}
	return a.seq < b.seq
}

// contractor is the bidding and executing half of a node's market.
type contractor struct {
	capacity resource.Vector
	free     resource.Vector
	queue    []*contract
	running  map[TaskKey]*contract
	seq      uint64
	runtime  *predict.Runtime
	load     *predict.Load
	runs     map[string][2]int // per job type: successes, runs
	holds    map[TaskKey]*hold
	reserves map[string]*reservation
	results  []*pendingResult
	// resultsDue is no later than the earliest next of results: before
	// it repeatResults has nothing to do (a busy node keeps a minute of
	// finished tasks there, and Tick runs every 10 ms).
	resultsDue time.Time
	// resultOf indexes results by the attempt they report, for acks.
	resultOf map[resultID]*pendingResult
	accepted int // awards accepted so far
	// mix is the task mix this node has seen called for: its bids weigh
	// GPU fragmentation under it, and a GPU share goes to the card that
	// fragments least (frag.go).
	mix demandMix
}

// resultID names the attempt a final report is about.
type resultID struct {
	key     TaskKey
	epoch   uint64
	attempt int
}

func newContractor(capv resource.Vector, rc predict.RuntimeConfig) contractor {
	return contractor{
		capacity: capv.Clone(), free: capv.Clone(), running: map[TaskKey]*contract{},
		runtime: predict.NewRuntime(rc), load: predict.NewLoad(0, 0), runs: map[string][2]int{},
		holds: map[TaskKey]*hold{}, reserves: map[string]*reservation{}, resultOf: map[resultID]*pendingResult{},
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

// couldHold is why a node (its site, labels and capacity) could never
// run req, or "" when it could, given time.
func couldHold(site string, labels map[string]string, capacity resource.Vector, req resource.Request) string {
	if why := resource.Constraints(site, labels, req); why != "" {
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
	probe := &contract{spec: TaskSpec{TaskOffer: o}, seq: c.seq + 1}
	var pending []*contract
	for _, k := range c.queue {
		if ahead(k, probe) {
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
		if len(c.reserves) == 0 {
			al, why := resource.Fit(free, req)
			return al, why == ""
		}
		v, _ := c.minusReserves(free.Clone(), gang)
		if al, why := resource.Fit(v, req); why == "" {
			return al, true
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
	c.seq++
	k.seq = c.seq
	i := sort.Search(len(c.queue), func(i int) bool { return ahead(k, c.queue[i]) })
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

// onCFP answers a call for proposals: a NoBid when the node could never
// run the task, else a Bid with its score and predicted start and finish.
func (m *Market) onCFP(from NodeID, cfp CFP) {
	c := &m.c
	o := cfp.Task
	if m.draining {
		m.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: m.cfg.Self, Reason: "node draining"})
		return
	}
	if why := resource.Constraints(m.cfg.Site, m.cfg.Labels, o.Request); why != "" {
		m.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: m.cfg.Self, Reason: why, Permanent: true})
		return
	}
	if _, why := resource.Fit(c.wholeCapacity(), o.Request); why != "" {
		m.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: m.cfg.Self, Reason: why, Permanent: true})
		return
	}
	if o.Request.GPU.Wants() {
		m.c.mix.observe(o.Request) // see demandMix on why GPU work only
	}
	m.dropSuperseded(o.Key, cfp.Auction.Epoch)
	if _, busy := c.running[o.Key]; busy || c.queued(o.Key) {
		m.send(cfp.Manager, NoBid{Auction: cfp.Auction, Bidder: m.cfg.Self, Reason: "already holds this task"})
		return
	}
	b := m.makeBid(cfp.Auction, o)
	if o.GangSize > 1 {
		b.Preempt = false
		if b.Slots = c.gangSlots(o); b.Slots > 0 {
			b.Start, b.Finish = m.now, m.now.Add(b.Runtime)
		} else if !b.Start.After(m.now) {
			b.Start = m.now.Add(time.Millisecond) // room only after reservations
			b.Finish = b.Start.Add(b.Runtime)
		}
	}
	m.send(cfp.Manager, b)
}

// dropSuperseded forgets a queued contract for key of an epoch older than
// epoch: its manager has placed the task again (its lease lapsed, say,
// while this node was slow to renew it), so the old contract can never
// run — its start would be rejected as stale — and holding it would make
// this node refuse the new placement as "already holds this task".
func (m *Market) dropSuperseded(key TaskKey, epoch uint64) {
	c := &m.c
	for _, k := range c.queue {
		if k.spec.Key == key && k.spec.Epoch < epoch {
			c.dequeue(key)
			m.event("", fmt.Sprintf("%s: queued epoch %d dropped, superseded by epoch %d", key, k.spec.Epoch, epoch))
			return
		}
	}
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
func (m *Market) makeBid(id AuctionID, o TaskOffer) Bid {
	c := &m.c
	now := m.now
	rt := c.predictRuntime(o, now)
	start := c.predictStart(o, now)
	preempt := false
	if start.Sub(now) > m.cfg.PreemptWait && c.victims(o.Request, o.Priority, m.cfg.PreemptMargin) != nil {
		start, preempt = now, true
	}
	finish := start.Add(rt)
	in := ScoreInput{Now: now, Offer: o, Capacity: c.capacity, Free: c.free, Start: start, Finish: finish,
		Runtime: rt, SuccessRate: c.successRate(o.Type), Weights: m.cfg.Weights}
	if !start.After(now) && !preempt {
		in.FragDelta, in.FragKnown = m.c.mix.fragDelta(c.free, o.Request)
	}
	return Bid{Auction: id, Bidder: m.cfg.Self, Score: m.scorer.Score(in), Start: start, Finish: finish, Runtime: rt, Preempt: preempt}
}

// onAward accepts an award if the node can still honour its bid (start no
// later than bid start + slack, or the eviction still works), else declines.
func (m *Market) onAward(a Award) {
	c := &m.c
	key := a.Task.Key
	reply := AwardReply{Auction: a.Auction, Bidder: m.cfg.Self}
	if m.draining {
		reply.Reason = "node draining"
		m.send(a.Manager, reply)
		return
	}
	m.dropSuperseded(key, a.Task.Epoch)
	if _, busy := c.running[key]; busy || c.queued(key) {
		reply.Reason = "already holds this task"
		m.send(a.Manager, reply)
		return
	}
	rt := c.predictRuntime(a.Task.TaskOffer, m.now)
	slack := max(m.cfg.BidSlack, rt/10)
	start := c.predictStart(a.Task.TaskOffer, m.now)
	ok := !start.After(a.Bid.Start.Add(slack)) || a.Last
	preempt := false
	if !ok && a.Bid.Preempt && c.victims(a.Task.Request, a.Task.Priority, m.cfg.PreemptMargin) != nil {
		ok, preempt = true, true
	}
	if !ok {
		reply.Reason = fmt.Sprintf("state changed: would start %v later than bid", start.Sub(a.Bid.Start).Round(time.Millisecond))
		m.send(a.Manager, reply)
		return
	}
	reply.Accept = true
	c.accepted++
	m.send(a.Manager, reply)
	c.enqueue(&contract{spec: a.Task, manager: a.Manager, accepted: m.now, beat: m.now, runtime: rt, preempt: preempt})
	m.schedule()
}

// schedule starts queued contracts that fit, in queue order, and issues
// the evictions a preempting contract needs. A contract that fits beside
// the gang reservations starts; one that only fits in reserved room
// starts if it is predicted to end before the reservations can be
// honoured (backfill). Behind the first contract that cannot start, a
// contract starts only if it does not delay that one (headGuard).
func (m *Market) schedule() {
	c := &m.c
	roomAt := c.reservedRoomAt(m.now)
	var guard *headGuard
	for i := 0; i < len(c.queue); {
		k := c.queue[i]
		al, ok := c.canStart(k.spec.Request, k.runtime, m.now, roomAt)
		if ok && guard != nil && !guard.admits(k.spec.Request, al, m.now.Add(k.runtime)) {
			ok = false
		} else if !ok && guard == nil {
			guard = c.guardFor(k, m.now)
		}
		if ok {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.free.Take(k.spec.Request, al)
			k.alloc, k.started, k.running, k.beat = al, m.now, true, m.now
			c.running[k.spec.Key] = k
			m.emit(StartTask{Task: k.spec, Alloc: al})
			m.send(k.manager, TaskStatus{Key: k.spec.Key, Epoch: k.spec.Epoch, Attempt: k.spec.Attempt, Node: m.cfg.Self, State: TaskRunning, Time: m.now})
			continue
		}
		if k.preempt {
			for _, v := range c.victims(k.spec.Request, k.spec.Priority, m.cfg.PreemptMargin) {
				v.stopReason = "preempted"
				m.emit(StopTask{Key: v.spec.Key, Epoch: v.spec.Epoch, Reason: fmt.Sprintf("preempted by %s (priority %d > %d)", k.spec.Key, k.spec.Priority, v.spec.Priority), Grace: m.cfg.PreemptGrace})
			}
			k.preempt = false
		}
		i++
	}
}

// onCancelTask drops a queued contract or stops a running one.
// Only the task's manager may cancel it.
func (m *Market) onCancelTask(from NodeID, ct CancelTask) {
	c := &m.c
	if h := c.holds[ct.Key]; h != nil && h.k.spec.Epoch == ct.Epoch && from == h.k.manager {
		delete(c.holds, ct.Key)
		c.free.Give(h.k.spec.Request, h.k.alloc)
		m.schedule()
		return
	}
	if k, ok := c.running[ct.Key]; ok && k.spec.Epoch == ct.Epoch && from == k.manager {
		if k.stopReason == "" {
			k.stopReason = "cancelled"
			m.emit(StopTask{Key: ct.Key, Epoch: ct.Epoch, Reason: ct.Reason, Grace: m.cfg.PreemptGrace})
		}
		return
	}
	for _, k := range c.queue {
		if k.spec.Key == ct.Key && k.spec.Epoch == ct.Epoch && from == k.manager {
			c.dequeue(ct.Key)
			m.send(k.manager, TaskStatus{Key: ct.Key, Epoch: ct.Epoch, Attempt: k.spec.Attempt, Node: m.cfg.Self, State: TaskCancelled, ExitCode: -1, Reason: ct.Reason, Time: m.now})
			return
		}
	}
}

// TaskExited reports that a task this market started has exited, with its
// exit code (-1 when killed or failed to start) and reason.
func (m *Market) TaskExited(now time.Time, key TaskKey, epoch uint64, exitCode int, reason string) {
	m.enter(now)
	defer m.leave()
	c := &m.c
	k, ok := c.running[key]
	if !ok || k.spec.Epoch != epoch {
		m.event(key.Job, fmt.Sprintf("exit of unknown task %s epoch %d ignored", key, epoch))
		return
	}
	delete(c.running, key)
	c.free.Give(k.spec.Request, k.alloc)
	ran := now.Sub(k.started)
	st := TaskStatus{Key: key, Epoch: epoch, Attempt: k.spec.Attempt, Node: m.cfg.Self, ExitCode: exitCode, Reason: reason, Time: now, Runtime: ran}
	switch {
	case k.stopReason == "preempted":
		st.State = TaskPreempted
	case k.stopReason == "cancelled":
		st.State = TaskCancelled
	case exitCode == 0:
		st.State = TaskSucceeded
	default:
		st.State = TaskFailed
	}
	if st.State == TaskSucceeded || st.State == TaskFailed {
		r := c.runs[k.spec.Type]
		r[1]++
		if st.State == TaskSucceeded {
			r[0]++
			c.runtime.Observe(k.spec.Type, ran)
			m.emit(RecordRuntime{Type: k.spec.Type, Runtime: ran})
		}
		c.runs[k.spec.Type] = r
	}
	// The manager may be unreachable right now (restarting, partitioned):
	// repeat the final report, 1 s, 2 s, 4 s … apart, until the manager
	// acknowledges it or maxResultRepeats went out.
	st.AckWanted = true
	m.send(k.manager, st)
	m.addResult(&pendingResult{to: k.manager, st: st, next: m.now.Add(m.cfg.LeaseEvery), gap: m.cfg.LeaseEvery,
		expires: m.now.Add(m.cfg.LeaseEvery * (1<<maxResultRepeats - 1))})
	m.schedule()
}

// pendingResult is a final report being repeated to its manager.
type pendingResult struct {
	to   NodeID
	st   TaskStatus
	next time.Time
	gap  time.Duration
	sent int
	// acked: the manager has the report (ResultAck); it is kept, unsent,
	// until expires, in case another node adopts the job (Rehome sends it
	// there).
	acked   bool
	expires time.Time // when the last repeat would go out
}

// maxResultRepeats bounds how often a final report is repeated; with
// doubling gaps from LeaseEvery (1 s) the last goes out about a minute
// after the task ended.
const maxResultRepeats = 6

// addResult keeps a final report for repeating.
func (m *Market) addResult(r *pendingResult) {
	c := &m.c
	c.results = append(c.results, r)
	c.resultOf[r.id()] = r
	if c.resultsDue.IsZero() || r.next.Before(c.resultsDue) {
		c.resultsDue = r.next
	}
}

// repeatResults sends the final reports whose repeat is due, and drops
// those repeated maxResultRepeats times and the acknowledged ones whose
// time is up.
func (m *Market) repeatResults() {
	c := &m.c
	if len(c.results) == 0 || m.now.Before(c.resultsDue) {
		return
	}
	keep := c.results[:0]
	var due time.Time
	for _, r := range c.results {
		if !m.now.Before(r.next) {
			if r.acked {
				m.dropResult(r)
				continue
			}
			m.send(r.to, r.st)
			r.sent++
			r.gap *= 2
			r.next = m.now.Add(r.gap)
		}
		if r.sent < maxResultRepeats {
			keep = append(keep, r)
			if due.IsZero() || r.next.Before(due) {
				due = r.next
			}
		} else {
			m.dropResult(r)
		}
	}
	clear(c.results[len(keep):])
	c.results, c.resultsDue = keep, due
}

func (r *pendingResult) id() resultID { return resultID{r.st.Key, r.st.Epoch, r.st.Attempt} }

// dropResult forgets r's index entry (repeatResults drops r itself).
func (m *Market) dropResult(r *pendingResult) {
	if m.c.resultOf[r.id()] == r {
		delete(m.c.resultOf, r.id())
	}
}

// onResultAck stops repeating the final report the manager acknowledged.
func (m *Market) onResultAck(from NodeID, a ResultAck) {
	if r := m.c.resultOf[resultID{a.Key, a.Epoch, a.Attempt}]; r != nil && r.to == from && !r.acked {
		r.acked, r.next = true, r.expires
	}
}

// heartbeat renews the lease of every task this node holds (queued or
// running) with its manager, every LeaseEvery.
func (m *Market) heartbeat() {
	c := &m.c
	if m.now.Sub(m.lastBeat) < m.cfg.LeaseEvery/4 {
		return // renewals are due at most every LeaseEvery; look four times as often
	}
	m.lastBeat = m.now
	beat := func(k *contract, st TaskState) {
		if m.now.Sub(k.beat) < m.cfg.LeaseEvery {
			return
		}
		k.beat = m.now
		m.send(k.manager, TaskStatus{Key: k.spec.Key, Epoch: k.spec.Epoch, Attempt: k.spec.Attempt, Node: m.cfg.Self, State: st, Time: m.now})
	}
	keys := make([]TaskKey, 0, len(c.running))
	for k := range c.running {
		keys = append(keys, k)
	}
	sortKeys(keys)
	for _, k := range keys {
		if r := c.running[k]; r.stopReason == "" {
			beat(r, TaskRunning)
		}
	}
	for _, k := range c.queue {
		beat(k, TaskAwarded)
	}
}

// sortKeys orders task keys by job, task, replica without formatting them.
func sortKeys(keys []TaskKey) {
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Job != b.Job {
			return a.Job < b.Job
		}
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		return a.Replica < b.Replica
	})
}
