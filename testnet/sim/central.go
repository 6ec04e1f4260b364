package sim

import (
	"slices"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/predict"
)

// unit is what a central scheduler places at once: one replica, or every
// replica of a gang (on distinct nodes).
type unit struct {
	job      int
	task     string
	replicas []int
	req      resource.Request
	est, rt  time.Duration
	seq      int
}

type placed struct {
	node   int
	req    resource.Request
	alloc  resource.Allocation
	estEnd time.Duration
	key    string
	// for failures and leaves: the run's start, its unit and its finish
	// event's generation
	start time.Duration
	u     *unit
	gen   uint64
}

// central is a baseline: one scheduler with an instant, exact view of
// every node's free resources, no messages. It schedules once per
// instant, after every arrival and finish of that instant.
type central struct {
	e       *engine
	policy  string
	pred    *predict.Runtime // easy-predicted's runtime predictor
	free    []resource.Vector
	queue   []*unit
	useq    int
	rr      int
	run     map[market.TaskKey]*placed
	left    []map[string]int // replicas of each task not yet finished
	dead    []bool
	jobLeft []int
	gen     uint64
	whole   bool          // conservative plans on a count of free nodes
	share   *centralShare // easy-fairshare's exact usage
}

func newCentral(e *engine, policy string) *central {
	c := &central{e: e, policy: policy, run: map[market.TaskKey]*placed{}}
	if policy == "easy-fairshare" {
		c.share = newCentralShare()
	}
	for _, n := range e.nodes {
		c.free = append(c.free, n.cap.Clone())
	}
	for _, j := range e.w.Jobs {
		l := map[string]int{}
		n := 0
		for _, t := range j.Spec.Tasks {
			l[t.Name] = max(t.Replicas, 1)
			n++
		}
		c.left = append(c.left, l)
		c.jobLeft = append(c.jobLeft, n)
	}
	c.dead = make([]bool, len(e.w.Jobs))
	if policy == "conservative" {
		c.whole = wholeNodes(e)
	}
	if policy == "easy-predicted" {
		c.pred = predict.NewRuntime(predict.RuntimeConfig{})
	}
	return c
}

func (c *central) init() {}

func (c *central) handle(ev *event) {
	e := c.e
	switch ev.kind {
	case evArrive:
		j := &e.w.Jobs[ev.job]
		for _, t := range j.Spec.Tasks {
			if len(t.After) == 0 {
				c.enqueue(ev.job, t.Name)
			}
		}
	case evFinish:
		p := c.run[ev.key]
		if p == nil || p.gen != ev.gen {
			return // the run was lost to a failure or a leave
		}
		delete(c.run, ev.key)
		c.free[p.node].Give(p.req, p.alloc)
		if c.share != nil {
			ran := (e.now - p.start).Seconds()
			c.share.charge(e.now, e.w.Jobs[ev.job].User, ran*(float64(p.req.CPU)/1000+float64(len(p.alloc.GPUs))*c.share.cfg.GPUBilling))
		}
		e.running--
		e.lastProgress = e.now
		if t := e.task(ev.key); t != nil {
			t.Finish, t.Finished = e.now, true
		}
		if c.pred != nil && ev.key.Replica == p.u.replicas[0] {
			c.pred.Observe(e.w.Jobs[ev.job].Spec.Type, e.now-p.start)
		}
		ji := ev.job
		c.left[ji][ev.key.Task]--
		if c.left[ji][ev.key.Task] == 0 {
			c.jobLeft[ji]--
			if c.jobLeft[ji] == 0 && !c.dead[ji] {
				e.done++
			}
			for _, t := range e.w.Jobs[ji].Spec.Tasks {
				if !slices.Contains(t.After, ev.key.Task) {
					continue
				}
				ready := true
				for _, d := range t.After {
					if c.left[ji][d] > 0 {
						ready = false
					}
				}
				if ready {
					c.enqueue(ji, t.Name)
				}
			}
		}
	}
	if e.q.Len() > 0 && e.q[0].at == e.now {
		nx := e.q[0]
		switch {
		case e.cfg.EASYPass != PassEvent && (nx.kind == evArrive || nx.kind == evFinish):
			return // schedule once every event of this instant is in
		case e.cfg.EASYPass == PassEvent && ev.kind == evFinish && nx.kind == evFinish && nx.job == ev.job:
			return // a job's end is one event: all its replicas end together
		}
	}
	c.schedule()
}

func (c *central) enqueue(ji int, name string) {
	if c.dead[ji] {
		return
	}
	j := &c.e.w.Jobs[ji]
	ts, _ := j.Spec.Task(name)
	n := max(ts.Replicas, 1)
	mk := func(reps []int) *unit {
		c.useq++
		return &unit{job: ji, task: name, replicas: reps, req: ts.Request, est: ts.Estimate, rt: j.Runtimes[name], seq: c.useq}
	}
	k := 1
	if ts.Gang && n > 1 {
		k = n
	}
	capable := 0
	for _, nd := range c.e.nodes {
		if _, why := resource.Fit(nd.cap, ts.Request); why == "" {
			capable++
		}
	}
	if capable < k {
		c.dead[ji] = true // never placeable: the job fails
		c.e.done++
		return
	}
	if k > 1 {
		reps := make([]int, n)
		for r := range reps {
			reps[r] = r
		}
		c.queue = append(c.queue, mk(reps))
		return
	}
	for r := range n {
		c.queue = append(c.queue, mk([]int{r}))
	}
}

// pick chooses len(u.replicas) distinct nodes of free that fit u now, in
// the policy's order; nil when too few fit.
func (c *central) pick(u *unit, free []resource.Vector) []int {
	var cand []int
	for i := range free {
		if c.e.state[i] == stUp && fits(free[i], u.req) {
			cand = append(cand, i)
		}
	}
	k := len(u.replicas)
	if len(cand) < k {
		return nil
	}
	switch c.policy {
	case "random":
		c.e.rng.Shuffle(len(cand), func(a, b int) { cand[a], cand[b] = cand[b], cand[a] })
	case "round-robin":
		n := len(free)
		sort.SliceStable(cand, func(a, b int) bool {
			return (cand[a]-c.rr+n)%n < (cand[b]-c.rr+n)%n
		})
	case "least-loaded":
		sort.SliceStable(cand, func(a, b int) bool {
			fa := float64(free[cand[a]].CPU) / float64(max(c.e.nodes[cand[a]].cap.CPU, 1))
			fb := float64(free[cand[b]].CPU) / float64(max(c.e.nodes[cand[b]].cap.CPU, 1))
			return fa > fb
		})
	case "sjf-oracle":
		// best fit: the least CPU left over, then the fewest free GPUs
		sort.SliceStable(cand, func(a, b int) bool {
			la, lb := free[cand[a]].CPU-u.req.CPU, free[cand[b]].CPU-u.req.CPU
			if la != lb {
				return la < lb
			}
			return free[cand[a]].GPUShare() < free[cand[b]].GPUShare()
		})
	}
	return cand[:k]
}

func (c *central) start(u *unit, nodes []int) {
	e := c.e
	j := &e.w.Jobs[u.job]
	est := c.planned(u)
	for i, r := range u.replicas {
		n := nodes[i]
		a, why := resource.Fit(c.free[n], u.req)
		if why != "" {
			panic("sim: picked node does not fit: " + why)
		}
		c.free[n].Take(u.req, a)
		k := market.TaskKey{Job: j.ID, Task: u.task, Replica: r}
		if e.cfg.onStart != nil {
			e.cfg.onStart(n, k, e.now)
		}
		c.gen++
		c.run[k] = &placed{node: n, req: u.req, alloc: a, estEnd: e.now + est, key: k.String(), start: e.now, u: u, gen: c.gen}
		e.running++
		e.lastProgress = e.now
		if t := e.task(k); t != nil {
			t.Start, t.Started = e.now, true
		}
		p := metricsPred{estimate: u.est}
		switch c.policy {
		case "sjf-oracle":
			p.predicted = u.rt
		case "easy-predicted":
			p.predicted = est
		}
		e.preds = append(e.preds, predOf(k, p, u.rt))
		e.push(&event{at: e.now + u.rt, kind: evFinish, node: n, job: u.job, key: k, gen: c.gen})
	}
	if c.policy == "round-robin" {
		c.rr = (nodes[len(nodes)-1] + 1) % len(c.free)
	}
}

func (c *central) schedule() {
	if len(c.queue) == 0 {
		return
	}
	if isBackfill(c.policy) {
		c.backfillPass()
		return
	}
	if c.policy == "conservative" {
		c.conservativePass()
		return
	}
	// list scheduling: every unit that fits starts, in queue order
	// (sjf-oracle: shortest true runtime first)
	order := c.queue
	if c.policy == "sjf-oracle" {
		order = slices.Clone(c.queue)
		sort.SliceStable(order, func(a, b int) bool { return order[a].rt < order[b].rt })
	}
	started := map[*unit]bool{}
	for _, u := range order {
		if c.dead[u.job] {
			started[u] = true
			continue
		}
		if nodes := c.pick(u, c.free); nodes != nil {
			c.start(u, nodes)
			started[u] = true
		}
	}
	c.dropStarted(started)
}

// dropStarted removes from the queue the units a pass started (or found
// dead), keeping the others in order.
func (c *central) dropStarted(started map[*unit]bool) {
	kept := c.queue[:0]
	for _, u := range c.queue {
		if !started[u] {
			kept = append(kept, u)
		}
	}
	clear(c.queue[len(kept):])
	c.queue = kept
}

// The central baselines under failures and churn: a node that fails or
// leaves loses its running tasks, which are queued again from scratch in
// their original order (a gang loses every member, wherever they ran);
// a node down, absent or gone takes nothing. The scheduler's view is
// exact and instant, so it needs no liveness detection.

// evict stops every run on node i and queues its units again.
func (c *central) evict(i int) {
	e := c.e
	var keys []market.TaskKey
	for k, p := range c.run {
		if p.node == i {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, market.TaskKey.Compare)
	lost := map[*unit]bool{}
	var units []*unit
	for _, k := range keys {
		if u := c.run[k].u; !lost[u] {
			lost[u] = true
			units = append(units, u)
		}
	}
	for _, u := range units {
		again := &unit{job: u.job, task: u.task, req: u.req, est: u.est, rt: u.rt, seq: u.seq}
		for _, r := range u.replicas {
			k := market.TaskKey{Job: e.w.Jobs[u.job].ID, Task: u.task, Replica: r}
			p, ok := c.run[k]
			if !ok || p.u != u {
				continue // finished already
			}
			delete(c.run, k)
			c.free[p.node].Give(p.req, p.alloc)
			e.running--
			e.stats.restarted++
			e.stats.lostWork += e.now - p.start
			if t := e.task(k); t != nil {
				t.Started = false
			}
			again.replicas = append(again.replicas, r)
		}
		if len(again.replicas) > 0 && !c.dead[u.job] {
			at, _ := slices.BinarySearchFunc(c.queue, again.seq, func(x *unit, s int) int { return x.seq - s })
			c.queue = slices.Insert(c.queue, at, again)
		}
	}
	e.lastProgress = e.now
}

func (c *central) crash(i int) { c.evict(i); c.schedule() }

func (c *central) restart(int) { c.schedule() }

func (c *central) join(int) { c.schedule() }

// leave: the scheduler stops the node's tasks (requeued, as after a
// failure) and the node is gone at once.
func (c *central) leave(i int) {
	c.evict(i)
	c.e.left(c, i)
	c.schedule()
}

func (c *central) drained(int) {}

func (c *central) gone(int, bool) {}
