package market

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// cluster drives several markets with a virtual clock and instant-ish
// message delivery, and simulates task execution: a task's runtime comes
// from run(spec) (exit code and duration).
type cluster struct {
	t       *testing.T
	now     time.Time
	nodes   []*Market
	ids     []NodeID
	latency time.Duration
	queue   []delivery
	running map[NodeID]map[TaskKey]runningTask
	run     func(TaskSpec, NodeID) (int, time.Duration)
	starts  []startRec
	events  []string
	peak    map[NodeID]int64
	// advertEvery is how often (virtual) the markets' views are refreshed.
	advertEvery time.Duration
	lastAdvert  time.Time
	// cut nodes lose every message to or from them (a partition).
	cut map[NodeID]bool
	// forgotten lists the ForgetJob effects, as "node/job".
	forgotten []string
	// sent counts the messages sent, by kind and final state ("task_status/succeeded").
	sent map[string]int
	// drop, if set, loses the deliveries it returns true for.
	drop func(delivery) bool
	// refused counts the Refused effects, by reason.
	refused map[string]int
	// outputs, if set, gives a succeeded task's stored outputs.
	outputs func(TaskSpec, NodeID) *DataRef
	// paused nodes, since when, stand still: nothing is delivered to
	// them (it waits), they do not tick or hear of their tasks' exits
	// (the tasks run on), as a stopped or starved process.
	paused map[NodeID]time.Time
}

func (c *cluster) outputsOf(s TaskSpec, id NodeID) *DataRef {
	if c.outputs == nil || len(s.Outputs) == 0 {
		return nil
	}
	return c.outputs(s, id)
}

type delivery struct {
	at   time.Time
	from NodeID
	to   NodeID
	msg  Msg
	seq  int
}

type runningTask struct {
	spec  TaskSpec
	end   time.Time
	code  int
	stop  bool
	alloc resource.Allocation
}

type startRec struct {
	key   TaskKey
	node  NodeID
	at    time.Time
	end   time.Time
	index string // the task's AGORA_ARRAY_INDEX, for an array's replica
	value string // its AGORA_ARRAY_VALUE
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCluster(t *testing.T, caps ...resource.Vector) *cluster {
	return newClusterWith(t, nil, caps...)
}

// newClusterWith is newCluster with each node's configuration adjusted
// by configure (when not nil).
func newClusterWith(t *testing.T, configure func(i int, c *Config), caps ...resource.Vector) *cluster {
	c := &cluster{t: t, now: t0, cut: map[NodeID]bool{}, latency: time.Millisecond, running: map[NodeID]map[TaskKey]runningTask{}, peak: map[NodeID]int64{},
		refused: map[string]int{}}
	for i, cp := range caps {
		id := NodeID(fmt.Sprintf("n%d", i))
		cfg := Config{Self: id, Capacity: cp, Seed: int64(i)}
		if configure != nil {
			configure(i, &cfg)
		}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, m)
		c.ids = append(c.ids, id)
		c.running[id] = map[TaskKey]runningTask{}
	}
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Second }
	c.adverts()
	return c
}

func (c *cluster) index(id NodeID) int {
	for i, x := range c.ids {
		if x == id {
			return i
		}
	}
	c.t.Fatalf("unknown node %s", id)
	return -1
}

// adverts gives every market a fresh view of every other.
func (c *cluster) adverts() {
	for i, m := range c.nodes {
		for j, o := range c.nodes {
			if i != j && !c.cut[c.ids[i]] && !c.cut[c.ids[j]] && !c.isPaused(c.ids[i]) && !c.isPaused(c.ids[j]) {
				m.Advert(c.now, Peer{ID: c.ids[j], Limits: o.Config().Limits, Capacity: o.Capacity(), Free: o.Free(), Queue: o.QueueLen(), PredictedWait: o.PredictedWait(c.now),
					Reserved: o.Reserved(), Waiting: o.Waiting(), HeadRoom: o.HeadRoom(), Users: o.UserUsage()})
			}
		}
	}
}

var seqNo int

// drain carries out every node's effects.
func (c *cluster) drain() {
	if c.sent == nil {
		c.sent = map[string]int{}
	}
	for i, m := range c.nodes {
		for _, e := range m.Ready() {
			switch x := e.(type) {
			case Send:
				c.count(x.Msg)
				seqNo++
				c.queue = append(c.queue, delivery{at: c.now.Add(c.latency), from: c.ids[i], to: x.To, msg: x.Msg, seq: seqNo})
			case Broadcast:
				c.sent["broadcast/"+Kind(x.Msg)]++
				for j := range c.nodes {
					if j != i {
						seqNo++
						c.queue = append(c.queue, delivery{at: c.now.Add(c.latency), from: c.ids[i], to: c.ids[j], msg: x.Msg, seq: seqNo})
					}
				}
			case StartTask:
				code, d := c.run(x.Task, c.ids[i])
				c.running[c.ids[i]][x.Task.Key] = runningTask{spec: x.Task, end: c.now.Add(d), code: code, alloc: x.Alloc}
				c.starts = append(c.starts, startRec{key: x.Task.Key, node: c.ids[i], at: c.now, end: c.now.Add(d), index: x.Task.Env[ArrayIndexVar], value: x.Task.Env[ArrayValueVar]})
				var used int64
				for _, r := range c.running[c.ids[i]] {
					used += r.spec.Request.CPU
				}
				c.peak[c.ids[i]] = max(c.peak[c.ids[i]], used)
				if used > m.Capacity().CPU {
					c.t.Fatalf("node %s over-committed: %d millicores of %d", c.ids[i], used, m.Capacity().CPU)
				}
			case StopTask:
				r := c.running[c.ids[i]][x.Key]
				r.stop, r.end, r.code = true, c.now.Add(10*time.Millisecond), -1
				c.running[c.ids[i]][x.Key] = r
			case Event:
				c.events = append(c.events, fmt.Sprintf("%s %s: %s", x.Time.Sub(t0), c.ids[i], x.Text))
			case ForgetJob:
				c.forgotten = append(c.forgotten, string(c.ids[i])+"/"+x.Job)
			case Refused:
				c.refused[x.Reason]++
			}
		}
	}
}

func (c *cluster) count(msg Msg) {
	if c.sent == nil {
		c.sent = map[string]int{}
	}
	k := Kind(msg)
	if st, ok := msg.(TaskStatus); ok {
		k += "/" + string(st.State)
	}
	c.sent[k]++
}

// step advances virtual time to the next delivery, task end or tick.
func (c *cluster) step() {
	c.drain()
	next := c.now.Add(10 * time.Millisecond)
	for _, d := range c.queue {
		if !c.isPaused(d.to) && d.at.Before(next) {
			next = d.at
		}
	}
	for id, rs := range c.running {
		if c.isPaused(id) {
			continue
		}
		for _, r := range rs {
			if r.end.Before(next) {
				next = r.end
			}
		}
	}
	c.now = maxTime(c.now, next) // what waited for a paused node is due at once
	sort.Slice(c.queue, func(i, j int) bool {
		if !c.queue[i].at.Equal(c.queue[j].at) {
			return c.queue[i].at.Before(c.queue[j].at)
		}
		return c.queue[i].seq < c.queue[j].seq
	})
	var waiting []delivery // for paused nodes
	for len(c.queue) > 0 && !c.queue[0].at.After(c.now) {
		d := c.queue[0]
		c.queue = c.queue[1:]
		if c.isPaused(d.to) {
			waiting = append(waiting, d)
			continue
		}
		if c.cut[d.from] || c.cut[d.to] || (c.drop != nil && c.drop(d)) {
			continue
		}
		c.nodes[c.index(d.to)].Step(c.now, d.from, d.msg)
		c.drain()
	}
	c.queue = append(waiting, c.queue...)
	for i, id := range c.ids {
		if c.isPaused(id) {
			continue
		}
		var done []TaskKey
		for k, r := range c.running[id] {
			if !r.end.After(c.now) {
				done = append(done, k)
			}
		}
		sort.Slice(done, func(a, b int) bool { return done[a].String() < done[b].String() })
		for _, k := range done {
			r := c.running[id][k]
			delete(c.running[id], k)
			reason := fmt.Sprintf("exit status %d", r.code)
			c.nodes[i].TaskExited(c.now, k, r.spec.Epoch, r.code, reason, c.outputsOf(r.spec, id))
			c.drain()
		}
	}
	for i, m := range c.nodes {
		if c.isPaused(c.ids[i]) {
			continue
		}
		// NextTick must never be later than the first Tick with work:
		// a Tick before it emits nothing.
		nt := m.NextTick()
		before := len(m.out) + len(m.saves) + len(m.dirty)
		m.Tick(c.now)
		if (nt.IsZero() || c.now.Before(nt)) && len(m.out)+len(m.saves)+len(m.dirty) > before {
			c.t.Fatalf("%s: NextTick said %v (now %v) but Tick emitted %v", c.ids[i], nt.Sub(t0), c.now.Sub(t0), append(m.saves, m.out...))
		}
	}
	if c.now.Sub(c.lastAdvert) >= c.advertEvery {
		c.adverts()
		c.lastAdvert = c.now
	}
	c.drain()
}

// isPaused says whether node id stands still (see cluster.paused).
func (c *cluster) isPaused(id NodeID) bool {
	_, ok := c.paused[id]
	return ok
}

// pause stops node i (see cluster.paused).
func (c *cluster) pause(i int) {
	if c.paused == nil {
		c.paused = map[NodeID]time.Time{}
	}
	c.paused[c.ids[i]] = c.now
}

// resume lets paused node i run again; tell says whether its market is
// told how long it stood still (Market.Paused), as a node's loop does.
// It ticks at once, before anything that waited is delivered.
func (c *cluster) resume(i int, tell bool) {
	since := c.paused[c.ids[i]]
	delete(c.paused, c.ids[i])
	if tell {
		c.nodes[i].Paused(c.now, c.now.Sub(since))
	}
	// Its clock fires first: what peers sent meanwhile is still in the
	// network's buffers, handed over after.
	c.nodes[i].Tick(c.now)
	c.drain()
}

// until steps until cond holds or the virtual deadline passes.
func (c *cluster) until(d time.Duration, what string, cond func() bool) {
	end := c.now.Add(d)
	for !cond() {
		if c.now.After(end) {
			c.t.Fatalf("virtual %v passed waiting for %s; events:\n%s", d, what, c.eventLog())
		}
		c.step()
	}
}

func (c *cluster) eventLog() string {
	s := ""
	for _, e := range c.events {
		s += e + "\n"
	}
	return s
}

func (c *cluster) submit(node int, id string, js spec.Job) {
	if err := c.nodes[node].Submit(c.now, id, js); err != nil {
		c.t.Fatal(err)
	}
	c.drain()
}

func (c *cluster) job(node int, id string) JobRecord {
	j, ok := c.nodes[node].Job(id)
	if !ok {
		c.t.Fatalf("node %d has no job %s", node, id)
	}
	return j
}

func cpuNode(cores int) resource.Vector {
	return resource.Vector{CPU: int64(cores) * 1000, Memory: 64 << 30, Disk: 1 << 40}
}

func gpuNode(cores, gpus int, mem int64, model string) resource.Vector {
	v := cpuNode(cores)
	for i := 0; i < gpus; i++ {
		v.GPUs = append(v.GPUs, resource.GPU{Index: i, Model: model, Memory: mem, Free: resource.WholeGPU})
	}
	return v
}

func task(name string, cpu int64, after ...string) spec.Task {
	return spec.Task{Name: name, Command: []string{"true"}, Request: resource.Request{CPU: cpu}, Retries: 3, Replicas: 1, After: after}
}

func job(name string, tasks ...spec.Task) spec.Job {
	return spec.Job{Name: name, Type: name, Priority: 5, Tasks: tasks}
}

// succeededOnce fails the test unless every replica of j has exactly one
// successful attempt in its history.
func succeededOnce(t *testing.T, j JobRecord) {
	t.Helper()
	for _, tr := range j.Tasks {
		ok := 0
		for _, h := range tr.History {
			if h.State == TaskSucceeded {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("%s succeeded %d times, want exactly once: %+v", tr.Key, ok, tr.History)
		}
	}
}
