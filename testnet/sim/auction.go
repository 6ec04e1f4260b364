package sim

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/cluster"
	"github.com/agora-sched/agora/market/wire"
)

// The auction under simulation: every node a real market.Market, driven
// by market/cluster — the virtual-time driver the market's scripted tests
// use too — on the engine's time line. This file is the glue: the
// cluster's events go on the engine's queue, its messages through the
// engine's network model (latency, bandwidth, loss, counting), and what
// its nodes do is recorded for the metrics. Failures, churn and
// recovery are the cluster's and the markets' (auction_faults.go).

type auctionSched struct {
	e       *engine
	cl      *cluster.Cluster
	pending map[predKey]metricsPred
	ended   map[string]bool
	kinds   map[string]int // messages by type, when debugging
	// lastUsage is the size of the last usage summary sent (usageSize).
	lastUsage struct {
		node string
		at   time.Time
		size int
	}
	// runs in flight per replica (faults only)
	inflight map[market.TaskKey]int
}

type predKey struct {
	key   market.TaskKey
	epoch uint64
}

type metricsPred struct {
	predicted, estimate time.Duration
	start               time.Duration
}

func newAuction(e *engine) (*auctionSched, error) {
	a := &auctionSched{e: e, pending: map[predKey]metricsPred{}, ended: map[string]bool{}, kinds: debugKinds}
	n := len(e.nodes)
	mcs := make([]market.Config, n)
	var absent []int
	for i, nd := range e.nodes {
		mc := marketConfig(e.cfg, nd, i, e.faults)
		mcs[i] = mc
		if e.faults && e.state[i] == stAbsent {
			absent = append(absent, i)
		}
	}
	cl, err := cluster.New(cluster.Config{
		Markets: mcs, Views: a.views(), Start: t0, AdvertEvery: e.cfg.AdvertInterval,
		Runtime: func(_ int, t market.TaskSpec) (time.Duration, int) { return e.runtime(t.Key), 0 },
		Clock:   a, Network: a, Observer: a, Faults: e.faults,
	}, absent...)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	a.cl = cl
	if e.faults {
		a.inflight = map[market.TaskKey]int{}
	}
	return a, nil
}

// marketConfig is node nd's (the i-th) market configuration: the one a
// node runs with `agora node`'s default flags — market.Defaults() — with
// the run's experiment settings (D, Scorer, Weights, AdvertInterval,
// when set), and the overrides that change how many events a run takes
// and no decision. TestSimRunsNodeConfig holds the list;
// docs/simulator.md says why each is there:
//
//   - JobRetention: finished jobs are kept for the whole run; forgetting
//     one is a wake-up per job, and a finished job takes part in no
//     decision;
//   - JobReplicas: without failures no manager is ever lost, so no copy
//     of a job record is ever read;
//   - LeaseEvery and LeaseTimeout: without failures or loss no lease
//     lapses (Config.LeaseEvery).
func marketConfig(cfg Config, nd node, i int, faults bool) market.Config {
	mc := market.Config{
		Self: nd.id, Site: nd.site, Capacity: nd.cap.Clone(),
		D: cfg.D, Scorer: cfg.Scorer, AdvertInterval: cfg.AdvertInterval,
		Seed:         cfg.Seed*1_000_003 + int64(i),
		JobRetention: -1,
	}
	if cfg.Weights != nil {
		mc.Weights = *cfg.Weights
	}
	if !faults {
		mc.JobReplicas = -1
		if cfg.Loss == 0 {
			mc.LeaseEvery, mc.LeaseTimeout = cfg.LeaseEvery, cfg.LeaseTimeout
		}
	}
	return mc
}

// views gives each node the peers it sees and broadcasts to: every
// other node up to ViewSize, else ViewSize drawn at random (seeded) —
// symmetric when nodes fail, so that the holders of a job record's copies
// see its manager and can tell it is gone.
func (a *auctionSched) views() [][]int {
	e := a.e
	n := len(e.nodes)
	view := make([][]int, n)
	if n-1 <= e.cfg.ViewSize {
		for i := range n {
			for j := range n {
				if j != i {
					view[i] = append(view[i], j)
				}
			}
		}
		return view
	}
	if e.faults {
		seen := make([]map[int]bool, n)
		for i := range n {
			seen[i] = map[int]bool{i: true}
		}
		for i := range n {
			for added := 0; added < e.cfg.ViewSize/2; {
				j := e.rng.Intn(n)
				if !seen[i][j] {
					seen[i][j], seen[j][i] = true, true
					view[i], view[j] = append(view[i], j), append(view[j], i)
					added++
				}
			}
		}
		return view
	}
	for i := range n {
		seen := map[int]bool{i: true}
		for len(view[i]) < e.cfg.ViewSize {
			j := e.rng.Intn(n)
			if !seen[j] {
				seen[j] = true
				view[i] = append(view[i], j)
			}
		}
	}
	return view
}

func (a *auctionSched) init() { a.cl.Start() }

func (a *auctionSched) now() time.Time { return t0.Add(a.e.now) }

// Now implements cluster.Clock.
func (a *auctionSched) Now() time.Duration { return a.e.now }

// Schedule implements cluster.Clock: the cluster's events share the
// engine's queue.
func (a *auctionSched) Schedule(at time.Duration, ev cluster.Event) {
	a.e.push(&event{at: at, kind: evCluster, cl: ev})
}

// Send implements cluster.Network: a message is counted with its real
// wire size, may be lost (Config.Loss), waits for its link (Bandwidth)
// and arrives after the latency.
func (a *auctionSched) Send(from, to int, msg market.Msg) (time.Duration, bool) {
	e := a.e
	if u, ok := msg.(market.UsageSummary); ok {
		// The usage topic, counted apart from the market's messages: its
		// JSON, once per receiver.
		e.usageBytes += int64(a.usageSize(u))
		return a.latency(from, to), true
	}
	e.msgs++
	if a.kinds != nil {
		a.kinds[fmt.Sprintf("%T", msg)]++
	}
	size := 0
	if b, err := wire.Encode(msg); err == nil {
		size = len(b)
		e.bytes += int64(size)
	}
	if e.lossRng != nil && e.lossRng.Float64() < e.cfg.Loss {
		e.stats.msgsLost++
		return 0, false
	}
	at := e.now
	if e.bw != nil {
		at = e.transmit(from, to, size)
	}
	return at - e.now + a.latency(from, to), true
}

// Link implements cluster.Network: job-record copies go over a stream,
// after the latency, never lost.
func (a *auctionSched) Link(from, to int) (time.Duration, bool) { return a.latency(from, to), true }

// usageSize is the JSON size of a usage summary, worked out once per
// summary (it goes to every node of the view).
func (a *auctionSched) usageSize(u market.UsageSummary) int {
	if a.lastUsage.node == u.Node && a.lastUsage.at.Equal(u.At) {
		return a.lastUsage.size
	}
	b, _ := json.Marshal(u.Summary)
	a.lastUsage.node, a.lastUsage.at, a.lastUsage.size = u.Node, u.At, len(b)
	return len(b)
}

func (a *auctionSched) latency(from, to int) time.Duration {
	f, t := a.e.nodes[from], a.e.nodes[to]
	if f.site == t.site {
		return a.e.cfg.Latency
	}
	return max(f.latency, t.latency, a.e.cfg.Latency)
}

// Effects implements cluster.Observer.
func (a *auctionSched) Effects(int, []market.Effect) {}

// Started implements cluster.Observer: a run's start goes on its task's
// record, with the runtime its node predicted.
func (a *auctionSched) Started(i int, t market.TaskSpec) {
	e := a.e
	k := t.Key
	if e.cfg.onStart != nil {
		e.cfg.onStart(i, k, e.now)
	}
	e.running++
	e.lastProgress = e.now
	if tr := e.task(k); tr != nil {
		if e.faults {
			a.recordStart(k, tr)
		} else {
			tr.Start, tr.Started, tr.Finished = e.now, true, false
		}
	}
	p := a.cl.Node(i).Market.Predict(t.Type, t.Estimate)
	a.pending[predKey{k, t.Epoch}] = metricsPred{predicted: p.Runtime, estimate: t.Estimate, start: e.now}
}

// Ended implements cluster.Observer: a run's end goes on its task's
// record; a run lost to a crash or cut short by a leave counts as work
// lost.
func (a *auctionSched) Ended(_ int, k market.TaskKey, r *cluster.Run, _ int, lost bool) {
	e := a.e
	e.running--
	pk := predKey{k, r.Epoch}
	p := a.pending[pk]
	delete(a.pending, pk)
	if lost {
		if !r.Stopping || r.Drained {
			e.stats.restarted++
			e.stats.lostWork += e.now - r.Start
		}
		if t := e.task(k); t != nil {
			a.recordEnd(k, t, r, false)
		}
		return
	}
	e.lastProgress = e.now
	if r.Drained {
		e.stats.restarted++
		e.stats.lostWork += e.now - r.Start
	}
	t := e.task(k)
	switch {
	case t == nil:
	case e.faults:
		if a.recordEnd(k, t, r, !r.Stopping) {
			e.preds = append(e.preds, predOf(k, p, e.now-p.start))
		}
	case r.Stopping:
		t.Started = false
	default:
		t.Finish, t.Finished = e.now, true
		e.preds = append(e.preds, predOf(k, p, e.now-p.start))
	}
}

// Saved implements cluster.Observer: a job ends with its record.
func (a *auctionSched) Saved(_ int, rec market.JobRecord) {
	if rec.State.Terminal() && !a.ended[rec.ID] {
		a.ended[rec.ID] = true
		a.e.done++
	}
}

// Left implements cluster.Observer.
func (a *auctionSched) Left(i int) { a.e.left(a, i) }

func (a *auctionSched) handle(ev *event) {
	e := a.e
	switch ev.kind {
	case evArrive:
		j := &e.w.Jobs[ev.job]
		i := e.rng.Intn(a.cl.N())
		if e.faults && e.state[i] != stUp {
			// The user submits to a working node instead.
			i = a.working(i)
			if i < 0 {
				e.push(&event{at: e.now + e.cfg.AdvertInterval, kind: evArrive, job: ev.job})
				return
			}
		}
		owner := ""
		if e.cfg.Users {
			owner = j.User
		}
		if err := a.cl.SubmitAs(i, j.ID, j.Spec, owner); err != nil && !a.ended[j.ID] {
			a.ended[j.ID] = true
			e.done++
		}
	case evCluster:
		a.cl.Handle(ev.cl)
	}
}

var debugKinds map[string]int
