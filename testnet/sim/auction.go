package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/predict"
	"github.com/agora-sched/agora/market/wire"
)

// minTickGap is the least a node's next tick lies ahead: the real node
// ticks every 10ms, so nothing is lost, and a deadline that Tick does not
// clear cannot spin the engine at one instant.
const minTickGap = time.Millisecond

type runningTask struct {
	gen      uint64
	epoch    uint64
	stopping bool
	start    time.Duration
	drained  bool // stopped by its node's drain: the run is lost work
	dup      bool // started while the replica ran elsewhere or had finished
}

type predKey struct {
	key   market.TaskKey
	epoch uint64
}

type auctionSched struct {
	e         *engine
	markets   []*market.Market
	index     map[market.NodeID]int
	view      [][]int // the peers each node sees and broadcasts to
	watchers  [][]int // the nodes that see each node
	dirty     []bool  // changed since its last advert
	dirtyList []int
	last      []advertSum     // what each node last advertised
	tickAt    []time.Duration // the node's pending tick, -1 when none
	tickGen   []uint64
	running   []map[market.TaskKey]*runningTask
	gen       uint64
	pending   map[predKey]metrics_pred
	ended     map[string]bool
	kinds     map[string]int // messages by type, when debugging

	// failures and churn (faults.go); nil without them
	mcfg    []market.Config
	saved   []map[string]market.JobRecord // each node's persisted job records (its Badger)
	hist    [][]predict.TypeStats         // each node's persisted runtime history
	lastAdv []market.Peer                 // each node's last advert
	// runs in flight per replica, and the nodes' ID digests (adoption)
	inflight map[market.TaskKey]int
	idHash   [][32]byte
	// the node that took each adopted job over last (absent: its first
	// manager still has it)
	managerOf map[string]int
	spins     []uint // ticks in a row that left the market's NextTick due
}

type metrics_pred struct {
	predicted, estimate time.Duration
	start               time.Duration
}

func newAuction(e *engine) (*auctionSched, error) {
	a := &auctionSched{e: e, index: map[market.NodeID]int{}, pending: map[predKey]metrics_pred{}, ended: map[string]bool{}, kinds: debugKinds}
	n := len(e.nodes)
	for i, nd := range e.nodes {
		mc := market.Config{
			Self: nd.id, Site: nd.site, Capacity: nd.cap.Clone(),
			D: e.cfg.D, LeaseEvery: e.cfg.LeaseEvery, LeaseTimeout: e.cfg.LeaseTimeout,
			ReserveTTL: e.cfg.ReserveTTL, StealEvery: e.cfg.StealEvery, StealBackoffMax: e.cfg.StealBackoffMax,
			GangForceEvery: e.cfg.GangForceEvery, Scorer: e.cfg.Scorer,
			Seed: e.cfg.Seed*1_000_003 + int64(i),
			// Replays span months; a finished job is never needed again,
			// but forgetting it would add a wake-up per job, and a wake
			// (a Tick) may move a decision: results stay as they were.
			JobRetention: -1,
		}
		if e.cfg.Weights != nil {
			mc.Weights = *e.cfg.Weights
		}
		m, err := market.New(mc)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		a.markets = append(a.markets, m)
		if e.faults {
			a.mcfg = append(a.mcfg, mc)
		}
		a.index[nd.id] = i
		a.running = append(a.running, map[market.TaskKey]*runningTask{})
	}
	a.tickAt = make([]time.Duration, n)
	a.tickGen = make([]uint64, n)
	for i := range a.tickAt {
		a.tickAt[i] = -1
	}
	a.view = make([][]int, n)
	for i := range n {
		if n-1 <= e.cfg.ViewSize {
			for j := range n {
				if j != i {
					a.view[i] = append(a.view[i], j)
				}
			}
			continue
		}
		seen := map[int]bool{i: true}
		for len(a.view[i]) < e.cfg.ViewSize {
			j := e.rng.Intn(n)
			if !seen[j] {
				seen[j] = true
				a.view[i] = append(a.view[i], j)
			}
		}
	}
	if e.faults {
		a.saved = make([]map[string]market.JobRecord, n)
		a.hist = make([][]predict.TypeStats, n)
		a.lastAdv = make([]market.Peer, n)
		a.inflight = map[market.TaskKey]int{}
		a.managerOf = map[string]int{}
		a.spins = make([]uint, n)
	}
	a.watchers = make([][]int, n)
	a.dirty = make([]bool, n)
	a.last = make([]advertSum, n)
	for i, v := range a.view {
		for _, j := range v {
			a.watchers[j] = append(a.watchers[j], i)
		}
		a.touch(i)
		a.last[i].queue = -1 // the first advert always goes out
	}
	return a, nil
}

func (a *auctionSched) init() {
	a.adverts()
	a.e.push(&event{at: a.e.cfg.AdvertInterval, kind: evAdvert})
}

func (a *auctionSched) now() time.Time { return t0.Add(a.e.now) }

func (a *auctionSched) adverts() {
	// Only nodes whose free room or queue changed since their last advert
	// publish a new one: the views hold no expiry, and an unchanged advert
	// would tell the same story.
	now := a.now()
	slices.Sort(a.dirtyList)
	for _, j := range a.dirtyList {
		a.dirty[j] = false
		if a.e.faults && !a.e.alive(j) {
			continue // a failed or absent node publishes nothing
		}
		o := a.markets[j]
		free := o.Free()
		res := o.Reserved()
		sum := advertSum{cpu: free.CPU, mem: free.Memory, gpu: free.GPUShare(), queue: o.QueueLen(),
			reserved: res.Gang, unreserved: res.Unreserved.CPU}
		if sum == a.last[j] {
			continue
		}
		a.last[j] = sum
		p := market.Peer{ID: a.e.nodes[j].id, Site: a.e.nodes[j].site, Capacity: o.Capacity(), Free: free, Queue: sum.queue, PredictedWait: o.PredictedWait(now), Reserved: res}
		if a.lastAdv != nil {
			a.lastAdv[j] = p
		}
		for _, i := range a.watchers[j] {
			if a.e.faults && !a.e.alive(i) {
				continue
			}
			a.markets[i].Advert(now, p)
			if p.Queue >= market.StealableQueue {
				a.wake(i) // a loaded peer may make an idle node steal
			}
		}
	}
	a.dirtyList = a.dirtyList[:0]
}

// advertSum is what an advert says that placement depends on; a node
// re-advertises only when it changes.
type advertSum struct {
	cpu, mem, gpu int64
	queue         int
	reserved      string // the gang the node keeps room for
	unreserved    int64  // CPU free beside it
}

// touch marks node i as possibly changed since its last advert.
func (a *auctionSched) touch(i int) {
	if !a.dirty[i] {
		a.dirty[i] = true
		a.dirtyList = append(a.dirtyList, i)
	}
}

func (a *auctionSched) latency(from, to int) time.Duration {
	f, t := a.e.nodes[from], a.e.nodes[to]
	if f.site == t.site {
		return a.e.cfg.Latency
	}
	return max(f.latency, t.latency, a.e.cfg.Latency)
}

// wake schedules node i's next tick for when its market says it has
// work (market.NextTick); an earlier pending tick is kept, a later one is
// superseded.
func (a *auctionSched) wake(i int) {
	nt := a.markets[i].NextTick()
	if nt.IsZero() {
		return
	}
	gap := minTickGap
	if a.spins != nil {
		gap <<= a.spins[i]
	}
	at := max(nt.Sub(t0), a.e.now+gap)
	if p := a.tickAt[i]; p >= 0 && p <= at {
		return
	}
	a.tickAt[i] = at
	a.gen++
	a.tickGen[i] = a.gen
	a.e.push(&event{at: at, kind: evTick, node: i, gen: a.gen})
}

func (a *auctionSched) send(from, to int, msg market.Msg) {
	a.e.msgs++
	if a.kinds != nil {
		a.kinds[fmt.Sprintf("%T", msg)]++
	}
	size := 0
	if b, err := wire.Encode(msg); err == nil {
		size = len(b)
		a.e.bytes += int64(size)
	}
	e := a.e
	if e.lossRng != nil && e.lossRng.Float64() < e.cfg.Loss {
		e.stats.msgsLost++
		return
	}
	at := e.now
	if e.bw != nil {
		at = e.transmit(from, to, size)
	}
	// gen is the boot of the node it is sent to: a node that fails
	// meanwhile never gets it, even after it restarts.
	e.push(&event{at: at + a.latency(from, to), kind: evDeliver, node: to, from: from, msg: msg, gen: e.boot[to]})
}

// reachable reports whether a broadcast reaches node j: it is alive, or
// failed so recently that its peers still count it as a member.
func (a *auctionSched) reachable(j int) bool {
	e := a.e
	return e.alive(j) || (e.state[j] == stDown && !e.goneSent[j])
}

// drain carries out node i's effects.
func (a *auctionSched) drain(i int) {
	a.wake(i)
	effs := a.markets[i].Ready()
	if len(effs) == 0 {
		return
	}
	a.touch(i)
	e := a.e
	for _, eff := range effs {
		switch x := eff.(type) {
		case market.Send:
			if j, ok := a.index[x.To]; ok {
				a.send(i, j, x.Msg)
			}
		case market.Broadcast:
			for _, j := range a.view[i] {
				if e.faults && !a.reachable(j) {
					continue
				}
				a.send(i, j, x.Msg)
			}
		case market.StartTask:
			k := x.Task.Key
			a.gen++
			r := &runningTask{gen: a.gen, epoch: x.Task.Epoch, start: e.now}
			a.running[i][k] = r
			if e.cfg.onStart != nil {
				e.cfg.onStart(i, k, e.now)
			}
			e.running++
			e.lastProgress = e.now
			if t := e.task(k); t != nil {
				if e.faults {
					a.recordStart(k, t, r)
				} else {
					t.Start, t.Started, t.Finished = e.now, true, false
				}
			}
			p := a.markets[i].Predict(x.Task.Type, x.Task.Estimate)
			a.pending[predKey{k, x.Task.Epoch}] = metrics_pred{predicted: p.Runtime, estimate: x.Task.Estimate, start: e.now}
			e.push(&event{at: e.now + e.runtime(k), kind: evFinish, node: i, key: k, gen: a.gen})
		case market.StopTask:
			if r, ok := a.running[i][x.Key]; ok && r.epoch == x.Epoch && !r.stopping {
				r.stopping = true
				r.drained = e.faults && e.state[i] == stLeaving
				a.gen++
				r.gen = a.gen
				e.push(&event{at: e.now + 10*time.Millisecond, kind: evFinish, node: i, key: x.Key, gen: a.gen})
			}
		case market.SaveJob:
			if a.saved != nil {
				if a.saved[i] == nil {
					a.saved[i] = map[string]market.JobRecord{}
				}
				a.saved[i][x.Job.ID] = x.Job
			}
			if x.Job.State.Terminal() && !a.ended[x.Job.ID] {
				a.ended[x.Job.ID] = true
				e.done++
			}
		}
	}
}

func (a *auctionSched) handle(ev *event) {
	e := a.e
	now := a.now()
	switch ev.kind {
	case evArrive:
		j := &e.w.Jobs[ev.job]
		i := e.rng.Intn(len(a.markets))
		if e.faults && e.state[i] != stUp {
			// The user submits to a working node instead.
			i = a.working(i)
			if i < 0 {
				e.push(&event{at: e.now + e.cfg.AdvertInterval, kind: evArrive, job: ev.job})
				return
			}
		}
		if err := a.markets[i].Submit(now, j.ID, j.Spec); err != nil {
			if !a.ended[j.ID] {
				a.ended[j.ID] = true
				e.done++
			}
			return
		}
		a.drain(i)
	case evDeliver:
		if e.faults && (!e.alive(ev.node) || ev.gen != e.boot[ev.node]) {
			return // its node failed or left
		}
		a.markets[ev.node].Step(now, e.nodes[ev.from].id, ev.msg)
		a.drain(ev.node)
	case evFinish:
		r, ok := a.running[ev.node][ev.key]
		if !ok || r.gen != ev.gen {
			return
		}
		delete(a.running[ev.node], ev.key)
		a.touch(ev.node)
		e.running--
		e.lastProgress = e.now
		code, reason := 0, "exit status 0"
		pk := predKey{ev.key, r.epoch}
		p := a.pending[pk]
		delete(a.pending, pk)
		if r.stopping {
			code, reason = -1, "stopped"
			if r.drained {
				e.stats.restarted++
				e.stats.lostWork += e.now - r.start
			}
		}
		if t := e.task(ev.key); t != nil {
			switch {
			case e.faults:
				if a.recordEnd(ev.key, t, r, !r.stopping) {
					e.preds = append(e.preds, predOf(ev.key, p, e.now-p.start))
				}
			case r.stopping:
				t.Started = false
			default:
				t.Finish, t.Finished = e.now, true
				e.preds = append(e.preds, predOf(ev.key, p, e.now-p.start))
			}
		}
		a.markets[ev.node].TaskExited(now, ev.key, r.epoch, code, reason)
		a.drain(ev.node)
		if e.faults && e.state[ev.node] == stLeaving {
			a.leftIfIdle(ev.node)
		}
	case evTick:
		i := ev.node
		if a.tickGen[i] != ev.gen {
			return // superseded by an earlier tick
		}
		a.tickAt[i] = -1
		a.markets[i].Tick(now)
		if a.spins != nil {
			// With failures and loss a market can report a deadline due
			// that its Tick does not clear at once (a half-placed gang
			// after a restart did, until Restore re-placed gangs whole;
			// rarer cases remain and move a few messages); the real node
			// ticks every 10ms regardless. Back off such ticks, up to a
			// second, rather than spin at minTickGap.
			if nt := a.markets[i].NextTick(); !nt.IsZero() && !nt.After(now) {
				a.spins[i] = min(a.spins[i]+1, 10)
			} else {
				a.spins[i] = 0
			}
		}
		a.drain(i)
	case evAdvert:
		a.adverts()
		e.push(&event{at: e.now + e.cfg.AdvertInterval, kind: evAdvert})
	}
}

var debugKinds map[string]int
