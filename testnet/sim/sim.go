// Package sim is Agora's deterministic discrete-event simulator: it runs a
// workload on a simulated cluster under the market (every node a real
// market.Market driven in virtual time) or under a central baseline
// scheduler, and reports the metrics of testnet/sim/metrics.
package sim

import (
	"container/heap"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// Schedulers are the scheduler names Run accepts.
var Schedulers = []string{"auction", "random", "round-robin", "least-loaded", "omniscient", "easy"}

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
	// Weights and D override the market's defaults when set.
	Weights *market.Weights
	D       int
	// AdvertInterval is how often each node's view of its peers is
	// refreshed; 2s.
	AdvertInterval time.Duration
	// Latency is the one-way delay between nodes of one site; 1ms.
	// Between sites it is the larger of the two classes' Latency (at
	// least Latency).
	Latency time.Duration
	// ViewSize bounds how many peers each node sees (and broadcasts to);
	// 64.
	ViewSize int
	// LeaseEvery and LeaseTimeout override the market's lease timers;
	// the simulator defaults them to 1m and 5m (no node fails here, and
	// per-second renewals of week-long tasks would dominate the run).
	LeaseEvery, LeaseTimeout time.Duration
	// SlowTick is how often every node is ticked while work remains; 5s.
	// A node that just took part in an exchange is ticked every 10ms for
	// the next few seconds.
	SlowTick time.Duration
	// Idle stops the run when nothing has started or finished for this
	// long with no task running (jobs left are unplaceable); 6h.
	Idle time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.AdvertInterval, 2*time.Second)
	def(&c.Latency, time.Millisecond)
	def(&c.LeaseEvery, time.Minute)
	def(&c.LeaseTimeout, 5*time.Minute)
	def(&c.SlowTick, 5*time.Second)
	def(&c.Idle, 6*time.Hour)
	if c.ViewSize <= 0 {
		c.ViewSize = 64
	}
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
}

// event kinds
const (
	evArrive = iota
	evDeliver
	evFinish
	evTick     // fast tick of one node
	evSlowTick // every node
	evAdvert
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

	done         int // jobs that reached an end
	lastProgress time.Duration
	running      int
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
	for i, j := range e.w.Jobs {
		e.jobIndex[j.ID] = i
		rec := metrics.JobRecord{ID: j.ID, User: j.User}
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
	var s scheduler
	switch cfg.Scheduler {
	case "auction":
		a, err := newAuction(e)
		if err != nil {
			return metrics.Input{}, err
		}
		s = a
	case "random", "round-robin", "least-loaded", "omniscient", "easy":
		s = newCentral(e, cfg.Scheduler)
	default:
		return metrics.Input{}, fmt.Errorf("sim: unknown scheduler %q (have %v)", cfg.Scheduler, Schedulers)
	}
	s.init()
	for e.done < len(e.jobs) && e.q.Len() > 0 {
		ev := e.q.next()
		e.now = ev.at
		if ev.kind == evArrive {
			e.lastProgress = e.now
		}
		if e.running == 0 && e.now-e.lastProgress > cfg.Idle && !pendingArrivals(e) {
			break // nothing can move any more: the jobs left are stuck
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
		End:         e.now,
	}
	for _, n := range e.nodes {
		in.Nodes = append(in.Nodes, n.cap)
	}
	in.Wall = time.Since(start)
	return in, nil
}

func pendingArrivals(e *engine) bool {
	for _, ev := range e.q {
		if ev.kind == evArrive {
			return true
		}
	}
	return false
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

// sorted order helper for deterministic iteration of small int sets
func sortedInts(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func predOf(k market.TaskKey, p metrics_pred, actual time.Duration) metrics.Prediction {
	return metrics.Prediction{Job: k.Job, Task: k.Task, Predicted: p.predicted, Estimate: p.estimate, Actual: actual}
}
