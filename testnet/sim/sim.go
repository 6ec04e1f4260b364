package sim

import (
	"container/heap"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/cluster"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// Schedulers are the scheduler names Run accepts: the auction, and the
// central baselines (central.go, backfill.go). sjf-oracle is list
// scheduling, shortest true runtime first with best fit: a strong
// baseline that knows runtimes, not a bound on any scheduler.
var Schedulers = []string{"auction", "random", "round-robin", "least-loaded", "sjf-oracle", "easy", "easy-predicted", "conservative", "sjf-backfill", "easy-fairshare"}

// Config configures one simulation run.
type Config struct {
	// Cluster is the simulated cluster; Classes is used when it is nil.
	Cluster *workload.Cluster
	Classes []workload.NodeClass
	// Workload is the jobs to run.
	Workload *workload.Workload
	// Scheduler names the scheduler (see Schedulers).
	Scheduler string
	// Seed seeds every random choice of the run.
	Seed int64
	// Weights, D and Scorer override the market's defaults when set.
	Weights *market.Weights
	D       int
	Scorer  string
	// AdvertInterval is how often each node's view of its peers is
	// refreshed; 2s.
	AdvertInterval time.Duration
	// Latency is the one-way delay between nodes of one site; 1ms.
	// Between sites it is the larger of the two classes' Latency (at
	// least Latency).
	Latency time.Duration
	// ViewSize bounds how many peers each node sees (and broadcasts to).
	// A real node sees every peer's adverts; the simulator does too up to
	// 1,024 nodes, and beyond that gives each node a random 128 peers
	// (memory and advert work grow with nodes × view).
	ViewSize int
	// Every node runs the market configuration `agora node` runs with
	// its default flags (marketConfig; docs/simulator.md), but for the
	// experiment settings above and these, which change how many events
	// a run takes and no decision:
	//
	// LeaseEvery and LeaseTimeout are the lease renewal period and lapse
	// in a run without failures or message loss, where a lease never
	// lapses: per-second renewals of a trace's hour-long tasks would
	// dominate the run. 5m and 20m. A run with either takes the node's.
	LeaseEvery, LeaseTimeout time.Duration
	// Idle stops the run when nothing has started or finished for this
	// long with no task running (jobs left are unplaceable); 6h.
	Idle time.Duration
	// Horizon, when set, stops the run at this virtual time; jobs not
	// finished by then count as unfinished.
	Horizon time.Duration
	// Loss is the probability that a market message is lost on its way
	// (drawn from a source of its own, seeded from Seed); 0 loses none.
	// Adverts are not lost: gossip repeats them.
	Loss float64
	// onStart, when set (by tests), is told of every task run's start.
	onStart func(node int, key market.TaskKey, at time.Duration)
	// GoneAfter is how long after a node fails its peers learn it is gone
	// (market.PeerGone) and its jobs are adopted: a real node's view drops
	// a peer that missed three advert intervals; 3 × AdvertInterval.
	GoneAfter time.Duration
	// EASYOverrun and EASYPass choose the textbook EASY variant of the
	// backfilling baselines (easy, easy-predicted, sjf-backfill): how a
	// run past its planned runtime counts at the head's shadow time
	// (OverrunNow, the default, or OverrunNever) and whether
	// they schedule once per instant (PassInstant, the default) or after
	// every event (PassEvent). Other schedulers ignore them.
	EASYOverrun, EASYPass string
	// Users submits every job as its trace's user (a network with an
	// authority, where jobs have owners): the fair share then charges
	// and orders them, and easy-fairshare orders its queue by the same
	// factors over exact usage. Without it jobs have no owner, as in an
	// open network, and the fair share does nothing.
	Users bool
	// Progress, when set, is called about every ProgressEvery of wall
	// time (10s when zero) while the run goes on, for a long replay's
	// operator. It only reads the run: results do not depend on it.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is how far a run has got.
type Progress struct {
	Virtual  time.Duration // simulated time reached
	JobsDone int           // jobs ended (succeeded, failed or dropped)
	Jobs     int           // jobs in the workload
	Running  int           // task runs in flight
	Wall     time.Duration // since the run started
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.AdvertInterval, 2*time.Second)
	def(&c.Latency, time.Millisecond)
	def(&c.LeaseEvery, 5*time.Minute)
	def(&c.LeaseTimeout, 20*time.Minute)
	def(&c.Idle, 6*time.Hour)
	def(&c.GoneAfter, 3*c.AdvertInterval)
	return c
}

// DefaultCluster is the heterogeneous cluster used when none is given:
// 12 GPU nodes (32 cores, 256 GiB, four 40 GiB A100s) and 8 CPU nodes
// (16 cores, 64 GiB).
func DefaultCluster() *workload.Cluster {
	gpu := resource.Vector{CPU: 32000, Memory: 256 << 30, Disk: 1 << 40}
	for i := range 4 {
		gpu.GPUs = append(gpu.GPUs, resource.GPU{Index: i, Model: "A100-SXM4-40GB", Memory: 40 << 30, Free: resource.WholeGPU})
	}
	cpu := resource.Vector{CPU: 16000, Memory: 64 << 30, Disk: 1 << 40}
	return &workload.Cluster{Nodes: []workload.NodeClass{{Count: 12, Resources: gpu}, {Count: 8, Resources: cpu}}}
}

// LargestNode is the class resources with the most CPU (ties: most GPUs),
// for sizing a synthetic workload's requests.
func LargestNode(c *workload.Cluster) resource.Vector {
	var best resource.Vector
	for _, nc := range c.Nodes {
		r := nc.Resources
		if r.CPU > best.CPU || (r.CPU == best.CPU && len(r.GPUs) > len(best.GPUs)) {
			best = r
		}
	}
	return best.Clone()
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type node struct {
	id      market.NodeID
	site    string
	latency time.Duration
	cap     resource.Vector
	// failures and churn (faults.go)
	rate                float64 // failures per hour
	repair, join, leave time.Duration
}

// event kinds
const (
	evArrive = iota
	evDeliver
	evFinish
	evTick // one node's market.Tick, when its NextTick is due
	evAdvert
	evCluster // one of the auction's market/cluster events
	// failures and churn (faults.go), handled by engine.fault
	evFail
	evRepair
	evGone // the other nodes learn that a failed node is gone
	evJoin
	evLeave
	evLeft // a leaving node's drain timed out
)

type event struct {
	at   time.Duration
	seq  uint64
	kind int
	node int // target node
	from int
	job  int
	msg  market.Msg
	key  market.TaskKey
	gen  uint64
	cl   cluster.Event // evCluster
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any     { o := *q; e := o[len(o)-1]; *q = o[:len(o)-1]; return e }
func (q *eventQueue) add(e *event) { heap.Push(q, e) }
func (q *eventQueue) next() *event { return heap.Pop(q).(*event) }

// engine is what every scheduler shares: the clock, the event queue and
// the records handed to metrics.
type engine struct {
	cfg   Config
	rng   *rand.Rand
	nodes []node
	w     *workload.Workload
	q     eventQueue
	seq   uint64
	now   time.Duration

	jobs     []metrics.JobRecord
	jobIndex map[string]int
	// task record index per job: task name -> replica -> index in Tasks
	taskIdx []map[string][]int
	preds   []metrics.Prediction
	msgs    int64
	bytes   int64
	// usageBytes are the fair share's usage summaries received, bytes.
	usageBytes int64

	done         int // jobs that reached an end
	lastProgress time.Duration
	running      int

	// failures, churn, loss and bandwidth (faults.go)
	faults   bool // the run has failures, churn or loss
	state    []nodeState
	boot     []uint64 // restarts of each node; messages to an older boot are lost
	goneSent []bool   // the peers were told the node is gone since it went down
	failRand []splitmix
	lossRng  *rand.Rand
	bw       []int64 // bytes per second of each node's link, nil when unlimited
	linkFree map[uint64]time.Duration
	stats    faultStats
}

func (e *engine) push(ev *event) {
	e.seq++
	ev.seq = e.seq
	e.q.add(ev)
}

func (e *engine) task(k market.TaskKey) *metrics.TaskRecord {
	ji, ok := e.jobIndex[k.Job]
	if !ok {
		return nil
	}
	idx, ok := e.taskIdx[ji][k.Task]
	if !ok || k.Replica < 0 || k.Replica >= len(idx) {
		return nil
	}
	return &e.jobs[ji].Tasks[idx[k.Replica]]
}

// Run simulates cfg.Workload on the cluster under cfg.Scheduler and
// reports the metrics.
func Run(cfg Config) (metrics.Report, error) {
	in, err := Simulate(cfg)
	if err != nil {
		return metrics.Report{}, err
	}
	return metrics.Compute(in), nil
}

// Simulate runs the simulation and returns the records metrics computes
// the report from.
func Simulate(cfg Config) (metrics.Input, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	if cfg.Workload == nil {
		return metrics.Input{}, fmt.Errorf("sim: no workload")
	}
	classes := cfg.Classes
	if cfg.Cluster != nil {
		classes = cfg.Cluster.Nodes
	}
	e := &engine{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), w: cfg.Workload, jobIndex: map[string]int{}}
	for ci, nc := range classes {
		for k := 0; k < nc.Count; k++ {
			e.nodes = append(e.nodes, node{
				id:      market.NodeID(fmt.Sprintf("n%d-%d", ci, k)),
				site:    nc.Site,
				latency: nc.Latency,
				cap:     nc.Resources.Clone(),
			})
		}
	}
	if len(e.nodes) == 0 {
		return metrics.Input{}, fmt.Errorf("sim: the cluster has no nodes")
	}
	e.w = fitMachine(e.w, e.nodes)
	if e.cfg.ViewSize <= 0 {
		e.cfg.ViewSize = 128
		if len(e.nodes) <= 1024 {
			e.cfg.ViewSize = len(e.nodes)
		}
	}
	for i, j := range e.w.Jobs {
		e.jobIndex[j.ID] = i
		rec := metrics.JobRecord{ID: j.ID, User: j.User, Class: j.Spec.Type, RecordedWait: j.RecordedWait, Recorded: j.Recorded}
		idx := map[string][]int{}
		for _, t := range j.Spec.Tasks {
			for r := range max(t.Replicas, 1) {
				idx[t.Name] = append(idx[t.Name], len(rec.Tasks))
				rec.Tasks = append(rec.Tasks, metrics.TaskRecord{Name: t.Name, Replica: r, After: t.After, Request: t.Request, Submit: j.Submit})
			}
		}
		e.jobs = append(e.jobs, rec)
		e.taskIdx = append(e.taskIdx, idx)
		e.push(&event{at: j.Submit, kind: evArrive, job: i})
	}
	e.setupFaults(classes)
	if cfg.Loss > 0 {
		e.lossRng = rand.New(rand.NewSource(cfg.Seed ^ 0x4c6f7373)) // "Loss"
	}
	var s scheduler
	switch cfg.Scheduler {
	case "auction":
		a, err := newAuction(e)
		if err != nil {
			return metrics.Input{}, err
		}
		s = a
	case "random", "round-robin", "least-loaded", "sjf-oracle", "easy", "easy-predicted", "conservative", "sjf-backfill", "easy-fairshare":
		switch cfg.EASYOverrun {
		case "", OverrunNow, OverrunNever:
		default:
			return metrics.Input{}, fmt.Errorf("sim: unknown EASY overrun rule %q (have %s, %s)", cfg.EASYOverrun, OverrunNow, OverrunNever)
		}
		switch cfg.EASYPass {
		case "", PassInstant, PassEvent:
		default:
			return metrics.Input{}, fmt.Errorf("sim: unknown EASY pass %q (have %s, %s)", cfg.EASYPass, PassInstant, PassEvent)
		}
		s = newCentral(e, cfg.Scheduler)
	default:
		return metrics.Input{}, fmt.Errorf("sim: unknown scheduler %q (have %v)", cfg.Scheduler, Schedulers)
	}
	s.init()
	every := cfg.ProgressEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	lastReport := start
	for n := 0; e.done < len(e.jobs) && e.q.Len() > 0; n++ {
		if cfg.Progress != nil && n%4096 == 0 && time.Since(lastReport) >= every {
			lastReport = time.Now()
			cfg.Progress(Progress{Virtual: e.now, JobsDone: e.done, Jobs: len(e.jobs), Running: e.running, Wall: time.Since(start)})
		}
		ev := e.q.next()
		if cfg.Horizon > 0 && ev.at > cfg.Horizon {
			e.now = cfg.Horizon
			break
		}
		e.now = ev.at
		if ev.kind == evArrive {
			e.lastProgress = e.now
		}
		if e.running == 0 && e.now-e.lastProgress > cfg.Idle && !pendingChange(e) {
			break // nothing can move any more: the jobs left are stuck
		}
		if ev.kind >= evFail {
			e.fault(s, ev)
			continue
		}
		s.handle(ev)
	}
	e.fixSubmits()
	in := metrics.Input{
		Scheduler:   cfg.Scheduler,
		Jobs:        e.jobs,
		Predictions: e.preds,
		Messages:    e.msgs,
		Bytes:       e.bytes,
		UsageBytes:  e.usageBytes,
		End:         e.now,
		Skipped:     e.w.Skipped,
		SkipReasons: e.w.SkipReasons,
		Measure:     metrics.Window{From: e.w.MeasureFrom, To: e.w.MeasureTo},
		Faults: metrics.Faults{
			NodeFailures: e.stats.failures, TasksRestarted: e.stats.restarted, LostWork: e.stats.lostWork,
			DuplicateRuns: e.stats.dupRuns, MessagesLost: e.stats.msgsLost,
		},
	}
	for _, n := range e.nodes {
		in.Nodes = append(in.Nodes, n.cap)
	}
	in.Wall = time.Since(start)
	return in, nil
}

// fixSubmits gives a task that waited for others its own submit time:
// when the last of its dependencies finished.
func (e *engine) fixSubmits() {
	for ji := range e.jobs {
		tasks := e.jobs[ji].Tasks
		for ti := range tasks {
			t := &tasks[ti]
			if len(t.After) == 0 {
				continue
			}
			ready, ok := t.Submit, true
			for _, dep := range t.After {
				for _, di := range e.taskIdx[ji][dep] {
					d := tasks[di]
					if !d.Finished {
						ok = false
					} else if d.Finish > ready {
						ready = d.Finish
					}
				}
			}
			if ok {
				t.Submit = ready
			}
		}
	}
}

type scheduler interface {
	init()
	handle(ev *event)
	faultHandler
}

// runtime is a task's true runtime.
func (e *engine) runtime(k market.TaskKey) time.Duration {
	ji, ok := e.jobIndex[k.Job]
	if !ok {
		return time.Second
	}
	if d := e.w.Jobs[ji].Runtimes[k.Task]; d > 0 {
		return d
	}
	return time.Second
}

func predOf(k market.TaskKey, p metricsPred, actual time.Duration) metrics.Prediction {
	return metrics.Prediction{Job: k.Job, Task: k.Task, Predicted: p.predicted, Estimate: p.estimate, Actual: actual}
}

// HeteroCluster is a heterogeneous cluster of n nodes (at least 10) in
// three classes: a tenth GPU servers (64 cores, 512 GiB, eight 80 GiB
// A100s) and half CPU servers (32 cores, 128 GiB) in the one data centre,
// and the rest edge boxes (4 cores, 8 GiB) at a site 20ms away.
func HeteroCluster(n int) *workload.Cluster {
	n = max(n, 10)
	gpu := resource.Vector{CPU: 64000, Memory: 512 << 30, Disk: 4 << 40}
	for i := range 8 {
		gpu.GPUs = append(gpu.GPUs, resource.GPU{Index: i, Model: "A100-SXM4-80GB", Memory: 80 << 30, Free: resource.WholeGPU})
	}
	cpu := resource.Vector{CPU: 32000, Memory: 128 << 30, Disk: 1 << 40}
	edge := resource.Vector{CPU: 4000, Memory: 8 << 30, Disk: 128 << 30}
	g, c := n/10, n/2
	return &workload.Cluster{Nodes: []workload.NodeClass{
		{Count: g, Site: "dc", Resources: gpu},
		{Count: c, Site: "dc", Resources: cpu},
		{Count: n - g - c, Site: "edge", Latency: 20 * time.Millisecond, Resources: edge},
	}}
}

// HeteroDevicesCluster is HeteroCluster(n) with devices of several
// kinds: its GPU servers hold eight A100-SXM4-80GB, eight H100-SXM5-80GB
// or eight L4 (24 GiB), a third of them each (the rest L4); one CPU
// server in four declares two FPGAs (u250); one edge box in two an NPU
// (hailo8). For the synthetic mix with devices=D and --gpu-models.
func HeteroDevicesCluster(n int) *workload.Cluster {
	base := HeteroCluster(n)
	gpuServers, cpuServers, edge := base.Nodes[0], base.Nodes[1], base.Nodes[2]
	server := func(model string, mem int64) resource.Vector {
		v := gpuServers.Resources.Clone()
		for i := range v.GPUs {
			v.GPUs[i].Model, v.GPUs[i].Memory = model, mem
		}
		return v
	}
	with := func(nc workload.NodeClass, count int, d resource.Device) []workload.NodeClass {
		plain, dev := nc, nc
		plain.Count, dev.Count = nc.Count-count, count
		dev.Resources = nc.Resources.Clone()
		dev.Resources.Devices = []resource.Device{d}
		var out []workload.NodeClass
		for _, c := range []workload.NodeClass{dev, plain} {
			if c.Count > 0 {
				out = append(out, c)
			}
		}
		return out
	}
	g := gpuServers.Count
	a, h := g/3, g/3
	var nodes []workload.NodeClass
	for _, c := range []struct {
		count int
		model string
		mem   int64
	}{{a, "A100-SXM4-80GB", 80 << 30}, {h, "H100-SXM5-80GB", 80 << 30}, {g - a - h, "L4", 24 << 30}} {
		if c.count > 0 {
			nodes = append(nodes, workload.NodeClass{Count: c.count, Site: gpuServers.Site, Resources: server(c.model, c.mem)})
		}
	}
	nodes = append(nodes, with(cpuServers, cpuServers.Count/4, resource.Device{Kind: "fpga", Model: "u250", Count: 2})...)
	nodes = append(nodes, with(edge, edge.Count/2, resource.Device{Kind: "npu", Model: "hailo8", Count: 1})...)
	return &workload.Cluster{Nodes: nodes}
}

// Inflate is the workload of the fragmentation experiment of Weng et al.
// ("Beware of Fragmentation", USENIX ATC '23): the tasks of w sampled with
// replacement (seeded), arriving one every gap and never departing (each
// runs for 365 days), until their GPU requests reach factor × gpus (the
// cluster's GPUs). Run it with a Horizon just past the last arrival and
// read the report's gpu_allocation_ratio.
func Inflate(w *workload.Workload, gpus, factor float64, seed int64, gap time.Duration) (*workload.Workload, error) {
	if gpus <= 0 {
		return nil, fmt.Errorf("sim: inflate: the cluster has no GPUs")
	}
	var pool []int
	for i, j := range w.Jobs {
		if len(j.Spec.Tasks) == 1 && max(j.Spec.Tasks[0].Replicas, 1) == 1 && len(j.Spec.Tasks[0].After) == 0 {
			pool = append(pool, i)
		}
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("sim: inflate: %s has no single-task jobs to sample", w.Name)
	}
	rng := rand.New(rand.NewSource(seed))
	out := &workload.Workload{Name: fmt.Sprintf("%s,inflate=%g", w.Name, factor)}
	const forever = 365 * 24 * time.Hour
	var asked float64
	for k := 0; asked < factor*gpus; k++ {
		if k >= 10_000_000 {
			return nil, fmt.Errorf("sim: inflate: %s asks for too few GPUs to reach %g× %g", w.Name, factor, gpus)
		}
		src := w.Jobs[pool[rng.Intn(len(pool))]]
		j := src
		j.ID = fmt.Sprintf("inf-%07d", k)
		j.Spec.Name = j.ID
		j.Spec.Tasks = slices.Clone(src.Spec.Tasks)
		j.Spec.Tasks[0].Estimate = forever
		j.Submit = time.Duration(k) * gap
		j.Runtimes = map[string]time.Duration{j.Spec.Tasks[0].Name: forever}
		asked += workload.GPUs(j.Spec.Tasks[0].Request.GPU)
		out.Jobs = append(out.Jobs, j)
	}
	return out, nil
}

// SWFCluster is the machine an SWF log ran on: MaxProcs (else MaxNodes)
// nodes of one processor each, as the log's header declares, so that a
// job of p processors is a gang of p one-CPU replicas on distinct nodes.
func SWFCluster(path string) (*workload.Cluster, error) {
	w, err := workload.OpenSWF(path, workload.SWFOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	n := 0
	if w.SWF != nil {
		n = w.SWF.MaxProcs
		if n <= 0 {
			n = w.SWF.MaxNodes
		}
	}
	if n <= 0 {
		return nil, fmt.Errorf("%s: the header declares neither MaxProcs nor MaxNodes; give --cluster", path)
	}
	one := resource.Vector{CPU: 1000, Memory: 1 << 30, Disk: 1 << 30}
	return &workload.Cluster{Nodes: []workload.NodeClass{{Count: n, Resources: one}}}, nil
}

// fitMachine leaves out of an SWF log, counting them as skipped, the
// jobs with a gang wider than the nodes that could each hold one of its
// replicas: no scheduler could ever start them on the machine it is
// replayed on. Other workloads keep such jobs, reported unfinished. It
// returns w itself when it drops none.
func fitMachine(w *workload.Workload, nodes []node) *workload.Workload {
	if w.SWF == nil {
		return w
	}
	fits := func(t spec.Task) bool {
		if !t.Gang || t.Pack {
			return true
		}
		n := 0
		for _, nd := range nodes {
			whole := nd.cap.Clone()
			for i := range whole.GPUs {
				whole.GPUs[i].Free = resource.WholeGPU
			}
			if _, why := resource.Fit(whole, t.Request); why == "" && resource.Constraints(nd.site, nil, t.Request) == "" {
				if n++; n >= t.Replicas {
					return true
				}
			}
		}
		return false
	}
	keep := func(j workload.Job) bool {
		for _, t := range j.Spec.Tasks {
			if !fits(t) {
				return false
			}
		}
		return true
	}
	drop := 0
	for _, j := range w.Jobs {
		if !keep(j) {
			drop++
		}
	}
	if drop == 0 {
		return w
	}
	out := *w
	out.Jobs = make([]workload.Job, 0, len(w.Jobs)-drop)
	out.SkipReasons = maps.Clone(w.SkipReasons)
	for _, j := range w.Jobs {
		if keep(j) {
			out.Jobs = append(out.Jobs, j)
		} else {
			out.Skip("wider than the machine")
		}
	}
	return &out
}
