package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
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
		}
		if e.cfg.Weights != nil {
			mc.Weights = *e.cfg.Weights
		}
		m, err := market.New(mc)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		a.markets = append(a.markets, m)
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
		o := a.markets[j]
		free := o.Free()
		sum := advertSum{cpu: free.CPU, mem: free.Memory, gpu: free.GPUShare(), queue: o.QueueLen()}
		if sum == a.last[j] {
			continue
		}
		a.last[j] = sum
		p := market.Peer{ID: a.e.nodes[j].id, Site: a.e.nodes[j].site, Capacity: o.Capacity(), Free: free, Queue: sum.queue, PredictedWait: o.PredictedWait(now)}
		for _, i := range a.watchers[j] {
			a.markets[i].Advert(now, p)
			if p.Queue >= 2 {
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
	at := max(nt.Sub(t0), a.e.now+minTickGap)
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
	if b, err := wire.Encode(msg); err == nil {
		a.e.bytes += int64(len(b))
	}
	a.e.push(&event{at: a.e.now + a.latency(from, to), kind: evDeliver, node: to, from: from, msg: msg})
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
				a.send(i, j, x.Msg)
			}
		case market.StartTask:
			k := x.Task.Key
			a.gen++
			a.running[i][k] = &runningTask{gen: a.gen, epoch: x.Task.Epoch}
			e.running++
			e.lastProgress = e.now
			if t := e.task(k); t != nil {
				t.Start, t.Started, t.Finished = e.now, true, false
			}
			p := a.markets[i].Predict(x.Task.Type, x.Task.Estimate)
			a.pending[predKey{k, x.Task.Epoch}] = metrics_pred{predicted: p.Runtime, estimate: x.Task.Estimate, start: e.now}
			e.push(&event{at: e.now + e.runtime(k), kind: evFinish, node: i, key: k, gen: a.gen})
		case market.StopTask:
			if r, ok := a.running[i][x.Key]; ok && r.epoch == x.Epoch && !r.stopping {
				r.stopping = true
				a.gen++
				r.gen = a.gen
				e.push(&event{at: e.now + 10*time.Millisecond, kind: evFinish, node: i, key: x.Key, gen: a.gen})
			}
		case market.SaveJob:
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
		if err := a.markets[i].Submit(now, j.ID, j.Spec); err != nil {
			if !a.ended[j.ID] {
				a.ended[j.ID] = true
				e.done++
			}
			return
		}
		a.drain(i)
	case evDeliver:
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
		if t := e.task(ev.key); t != nil {
			if r.stopping {
				code, reason = -1, "stopped"
				t.Started = false
			} else {
				t.Finish, t.Finished = e.now, true
				e.preds = append(e.preds, predOf(ev.key, p, e.now-p.start))
			}
		}
		a.markets[ev.node].TaskExited(now, ev.key, r.epoch, code, reason)
		a.drain(ev.node)
	case evTick:
		i := ev.node
		if a.tickGen[i] != ev.gen {
			return // superseded by an earlier tick
		}
		a.tickAt[i] = -1
		a.markets[i].Tick(now)
		a.drain(i)
	case evAdvert:
		a.adverts()
		e.push(&event{at: e.now + e.cfg.AdvertInterval, kind: evAdvert})
	}
}

var debugKinds map[string]int
