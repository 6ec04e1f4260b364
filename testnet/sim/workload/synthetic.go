package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// Limits and defaults of Synthetic.
const (
	// MaxSyntheticJobs is the most jobs Synthetic generates.
	MaxSyntheticJobs = 1_000_000
	// DefaultSyntheticJobs and DefaultLoad apply when the options leave
	// Jobs or Load at zero.
	DefaultSyntheticJobs = 1000
	DefaultLoad          = 0.7
	// MaxLoad is the highest offered load Synthetic accepts.
	MaxLoad = 100
	// DefaultUsers is the number of users when the options give none.
	DefaultUsers = 8
)

// DefaultCapacity is the cluster Synthetic sizes its arrivals for when
// the options give no capacity: 16 nodes of 32 cores, 256 GiB and four
// 40 GiB A100s.
func DefaultCapacity() resource.Vector {
	v := resource.Vector{CPU: 16 * 32000, Memory: 16 * 256 << 30}
	for i := range 64 {
		v.GPUs = append(v.GPUs, resource.GPU{Index: i, Model: "A100-SXM4-40GB", Memory: 40 << 30, Free: resource.WholeGPU})
	}
	return v
}

// Mix is the share of each kind of job; the shares need not add up to
// one, only their ratios count.
type Mix struct {
	Training, Batch, Inference float64
	// Devices is the share of device jobs: one task that holds one unit
	// of a declared device kind the capacity has (an FPGA kernel of
	// minutes, an NPU inference of seconds; deviceClass). Without
	// declared devices in the capacity there are none. Zero in
	// DefaultMix, so that the default workloads stay as they were.
	Devices float64
}

// DefaultMix is the mix used when the options give none.
var DefaultMix = Mix{Training: 0.15, Batch: 0.45, Inference: 0.40}

// SyntheticOptions shape a synthetic workload.
type SyntheticOptions struct {
	// Jobs is how many jobs to generate (DefaultSyntheticJobs if zero).
	Jobs int
	// Load is the offered load to aim for: the dominant share of the
	// capacity the jobs ask for over the span of their arrivals
	// (DefaultLoad if zero). See Workload.OfferedLoad.
	Load float64
	// Capacity is the whole cluster's capacity (DefaultCapacity if its
	// CPU is zero). It scales the arrival rate, and no job asks for more
	// than it has; without GPUs there are only CPU batch jobs.
	Capacity resource.Vector
	// Node, when its CPU is not zero, is the largest node: no replica
	// asks for more CPU, memory or GPUs than it has.
	Node resource.Vector
	// Users is how many users submit (DefaultUsers if zero).
	Users int
	// Mix is the share of each kind of job (DefaultMix if all zero).
	Mix Mix
}

// class is a job class: its Type, and the log-normal distribution of its
// tasks' true runtimes, by median and shape.
type class struct {
	name   string
	median time.Duration
	sigma  float64
	weight float64
}

var (
	trainingClasses = []class{
		{"train-resnet", 90 * time.Minute, 0.5, 0.5},
		{"train-bert", 4 * time.Hour, 0.6, 0.35},
		{"train-llm", 12 * time.Hour, 0.7, 0.15},
	}
	batchClasses = []class{
		{"batch-etl", 3 * time.Minute, 0.6, 1},
		{"batch-build", 8 * time.Minute, 0.5, 1},
		{"batch-sim", 20 * time.Minute, 0.8, 1},
	}
	inferenceClasses = []class{
		{"infer-resnet", 15 * time.Second, 0.5, 1},
		{"infer-bert", 40 * time.Second, 0.5, 1},
	}
)

// deviceClass is the class of a device job holding one unit of kind,
// and the CPU cores and memory beside it: FPGA kernels run minutes on a
// server's cores, NPU inference seconds on an edge box's; other kinds
// are minutes long.
func deviceClass(kind string) (class, int64, int64) {
	switch strings.ToLower(kind) {
	case "fpga":
		return class{"device-fpga", 10 * time.Minute, 0.6, 1}, 4, 16 << 30
	case "npu":
		return class{"device-npu", 30 * time.Second, 0.5, 1}, 1, 2 << 30
	}
	return class{"device-" + strings.ToLower(kind), 5 * time.Minute, 0.6, 1}, 1, 4 << 30
}

// Synthetic generates a workload from a seed: a mix of GPU training jobs
// (1, 2, 4 or 8 GPUs, hours long, a quarter of them gangs of 2–4
// replicas), CPU batch jobs (DAGs of 2–5 tasks of minutes each) and short
// inference jobs (seconds, a 0.1–0.5 share of one GPU). True runtimes are
// log-normal per job class (the job's Type). Users are u0, u1, … with
// Zipf-skewed shares of the jobs (u0 submits most); each user's estimates
// are the true runtime times a personal bias, drawn from 1.5–3, times
// log-normal noise (σ 0.35), rounded up as people round.
//
// Arrivals are Poisson: exponential gaps, scaled so that the span from
// the first arrival (at zero) to the last makes the offered load —
// Workload.OfferedLoad's dominant share — exactly opts.Load of
// opts.Capacity (a Poisson process conditioned on its count). Reports
// measure the jobs submitted in the middle eight tenths of the span
// (Workload.MeasureFrom, MeasureTo). The same
// seed and options give the same workload; all randomness comes from one
// *rand.Rand seeded with seed.
func Synthetic(seed int64, opts SyntheticOptions) *Workload {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed_a60a))
	opts = opts.withDefaults()
	g := &generator{r: r, opts: opts}
	g.limits()
	g.users()
	w := &Workload{Name: "synthetic:" + strconv.FormatInt(seed, 10)}
	for i := range opts.Jobs {
		w.Jobs = append(w.Jobs, g.job(fmt.Sprintf("syn-%06d", i)))
	}
	g.arrivals(w)
	return w
}

func (o SyntheticOptions) withDefaults() SyntheticOptions {
	if o.Jobs <= 0 {
		o.Jobs = DefaultSyntheticJobs
	}
	o.Jobs = min(o.Jobs, MaxSyntheticJobs)
	if o.Load <= 0 || math.IsNaN(o.Load) {
		o.Load = DefaultLoad
	}
	o.Load = min(o.Load, MaxLoad)
	if o.Capacity.CPU <= 0 {
		o.Capacity = DefaultCapacity()
	}
	if o.Users <= 0 {
		o.Users = DefaultUsers
	}
	if o.Mix.Training <= 0 && o.Mix.Batch <= 0 && o.Mix.Inference <= 0 {
		o.Mix = DefaultMix
	}
	o.Mix.Training, o.Mix.Batch, o.Mix.Inference = max(o.Mix.Training, 0), max(o.Mix.Batch, 0), max(o.Mix.Inference, 0)
	o.Mix.Devices = max(o.Mix.Devices, 0)
	if len(o.Capacity.GPUs) == 0 || (o.Node.CPU > 0 && len(o.Node.GPUs) == 0) {
		o.Mix = Mix{Batch: 1, Devices: o.Mix.Devices}
	}
	return o
}

type generator struct {
	r    *rand.Rand
	opts SyntheticOptions
	// the most one replica may ask for
	maxCPU, maxMem int64
	maxGPUs        int
	userWeight     []float64
	userBias       []float64
	// kinds are the device kinds the capacity declares, in its order.
	kinds []string
}

func (g *generator) limits() {
	c, n := g.opts.Capacity, g.opts.Node
	g.maxCPU, g.maxMem, g.maxGPUs = c.CPU, c.Memory, min(len(c.GPUs), 8)
	if n.CPU > 0 {
		g.maxCPU, g.maxMem, g.maxGPUs = min(g.maxCPU, n.CPU), min(g.maxMem, n.Memory), min(g.maxGPUs, len(n.GPUs))
	}
	if g.maxMem <= 0 {
		g.maxMem = math.MaxInt64
	}
	for _, d := range c.Devices {
		if d.Count > 0 && !slices.ContainsFunc(g.kinds, func(k string) bool { return strings.EqualFold(k, d.Kind) }) {
			g.kinds = append(g.kinds, d.Kind)
		}
	}
}

// users draws each user's estimate bias; shares follow Zipf's law.
func (g *generator) users() {
	for i := range g.opts.Users {
		g.userWeight = append(g.userWeight, 1/float64(i+1))
		g.userBias = append(g.userBias, 1.5+1.5*g.r.Float64())
	}
}

// pick draws an index with probability proportional to its weight.
func pick(r *rand.Rand, weights []float64) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

func pickClass(r *rand.Rand, cs []class) class {
	ws := make([]float64, len(cs))
	for i, c := range cs {
		ws[i] = c.weight
	}
	return cs[pick(r, ws)]
}

// job generates one job, its submit time still zero.
func (g *generator) job(id string) Job {
	m := g.opts.Mix
	user := pick(g.r, g.userWeight)
	j := Job{ID: id, User: "u" + strconv.Itoa(user), Runtimes: map[string]time.Duration{}}
	j.Spec.Name = id
	var c class
	weights := []float64{m.Training, m.Batch, m.Inference}
	if m.Devices > 0 && len(g.kinds) > 0 {
		weights = append(weights, m.Devices) // drawn only then: the other workloads stay as they were
	}
	switch pick(g.r, weights) {
	case 0:
		c = pickClass(g.r, trainingClasses)
		j.Spec.Priority = 5
		j.Spec.Tasks = []spec.Task{g.training()}
	case 1:
		c = pickClass(g.r, batchClasses)
		j.Spec.Priority = 3
		j.Spec.Tasks = g.batch()
	case 2:
		c = pickClass(g.r, inferenceClasses)
		j.Spec.Priority = 7
		j.Spec.Tasks = []spec.Task{g.inference()}
	default:
		var t spec.Task
		c, t = g.device()
		j.Spec.Priority = 5
		j.Spec.Tasks = []spec.Task{t}
	}
	j.Spec.Type = c.name
	for i := range j.Spec.Tasks {
		t := &j.Spec.Tasks[i]
		rt := g.runtime(c)
		j.Runtimes[t.Name] = rt
		t.Command = sleepCommand(rt)
		t.Estimate = g.estimate(rt, g.userBias[user])
	}
	return j
}

func (g *generator) training() spec.Task {
	gpus := min([]int{1, 2, 4, 8}[pick(g.r, []float64{0.35, 0.25, 0.2, 0.2})], g.maxGPUs)
	t := spec.Task{Name: "train", Replicas: 1}
	if g.r.Float64() < 0.25 {
		t.Replicas = min(2+g.r.IntN(3), len(g.opts.Capacity.GPUs)/gpus)
		t.Gang = t.Replicas > 1
	}
	t.Request = resource.Request{
		CPU:    min(int64(gpus)*4000, g.maxCPU),
		Memory: min(int64(gpus)*16<<30, g.maxMem),
		GPU:    resource.GPURequest{Count: gpus},
	}
	return t
}

func (g *generator) batch() []spec.Task {
	n := 2 + g.r.IntN(4)
	tasks := make([]spec.Task, n)
	for i := range tasks {
		cores := int64([]int{1, 2, 4, 8, 16}[pick(g.r, []float64{0.3, 0.3, 0.2, 0.15, 0.05})])
		tasks[i] = spec.Task{
			Name:     "stage" + strconv.Itoa(i),
			Replicas: 1,
			Request:  resource.Request{CPU: min(cores*1000, g.maxCPU), Memory: min(cores*2<<30, g.maxMem)},
		}
		if i == 0 {
			continue
		}
		after := []int{g.r.IntN(i)}
		if i > 1 && g.r.Float64() < 0.3 {
			if p := g.r.IntN(i); p != after[0] {
				after = append(after, p)
			}
		}
		slices.Sort(after)
		for _, p := range after {
			tasks[i].After = append(tasks[i].After, tasks[p].Name)
		}
	}
	return tasks
}

func (g *generator) inference() spec.Task {
	return spec.Task{
		Name:     "serve",
		Replicas: 1,
		Request: resource.Request{
			CPU:    min(int64(1+g.r.IntN(2))*1000, g.maxCPU),
			Memory: min(4<<30, g.maxMem),
			GPU:    resource.GPURequest{Share: int64(100 + 50*g.r.IntN(9))},
		},
	}
}

// device draws a device job's task: one unit of one of the declared
// kinds, each as likely.
func (g *generator) device() (class, spec.Task) {
	kind := g.kinds[g.r.IntN(len(g.kinds))]
	c, cores, mem := deviceClass(kind)
	return c, spec.Task{
		Name:     "kernel",
		Replicas: 1,
		Request: resource.Request{
			CPU:     min(cores*1000, g.maxCPU),
			Memory:  min(mem, g.maxMem),
			Devices: []resource.DeviceRequest{{Kind: kind, Count: 1}},
		},
	}
}

// runtime draws a true runtime of class c, from one second to a week.
func (g *generator) runtime(c class) time.Duration {
	d := time.Duration(float64(c.median) * math.Exp(c.sigma*g.r.NormFloat64()))
	return min(max(d.Round(time.Second), time.Second), 7*24*time.Hour)
}

// estimate is a user's estimate of a true runtime rt: biased high, noisy
// and rounded up to a round figure.
func (g *generator) estimate(rt time.Duration, bias float64) time.Duration {
	d := time.Duration(float64(rt) * bias * math.Exp(0.35*g.r.NormFloat64()))
	var step time.Duration
	switch {
	case d >= time.Hour:
		step = 15 * time.Minute
	case d >= 10*time.Minute:
		step = 5 * time.Minute
	case d >= time.Minute:
		step = time.Minute
	default:
		step = 10 * time.Second
	}
	return min(((d+step-1)/step)*step, spec.MaxDuration)
}

// arrivals spaces the jobs by exponential gaps scaled to the offered
// load, to the millisecond.
func (g *generator) arrivals(w *Workload) {
	n := len(w.Jobs)
	if n < 2 {
		return
	}
	work := w.Work()
	c := g.opts.Capacity
	need := work.CPUSeconds / resource.CoresFromMilli(c.CPU)
	if c.Memory > 0 {
		need = max(need, work.MemorySeconds/(float64(c.Memory)/(1<<30)))
	}
	if len(c.GPUs) > 0 {
		need = max(need, work.GPUSeconds/float64(len(c.GPUs)))
	}
	span := need / g.opts.Load
	gaps := make([]float64, n-1)
	total := 0.0
	for i := range gaps {
		gaps[i] = g.r.ExpFloat64()
		total += gaps[i]
	}
	at := 0.0
	for i := 1; i < n; i++ {
		at += gaps[i-1]
		w.Jobs[i].Submit = seconds(span * at / total)
	}
	w.Jobs[n-1].Submit = seconds(span)
	w.MeasureFrom, w.MeasureTo = seconds(span*0.1), seconds(span*0.9)
}
