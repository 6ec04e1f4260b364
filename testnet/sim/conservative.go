package sim

import (
	"slices"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// conservative is conservative backfilling (Mu'alem and Feitelson, IEEE
// TPDS 2001): every queued job, in arrival order, gets a reservation at
// the earliest time it fits for its planned runtime beside the running
// jobs and every reservation before it, so a later job may start early
// only where it delays no earlier one. A job starts when its reservation
// is now. The reservations are planned again at every pass from the
// running jobs' planned ends, so they move earlier when jobs end before
// their estimates (the "compression" of the paper) and never later while
// jobs end by them.
//
// Where every node is alike and holds one replica of any job at a time
// (the SWF machines), it plans on a count of free nodes, as the paper
// plans on a processor count: which nodes a future reservation gets is
// decided when it starts, so no reservation is held back by where an
// earlier one happened to be pinned. Elsewhere each node keeps a profile
// of what it will have free over time, and a job of k replicas needs k
// nodes that each hold it for the whole of its planned runtime, as
// Slurm's backfill plans on node bitmaps. A GPU request is fitted to a
// node's cards segment by segment, so such a reservation may count on
// cards that differ between segments; when the job starts it takes real
// cards from the node's free vector.

// profile is what one node will have free over time: free[j] from at[j]
// until at[j+1], the last for ever.
type profile struct {
	at   []time.Duration
	free []resource.Vector
}

// never is the earliest start of a request a profile cannot hold.
const never = time.Duration(1<<63 - 1)

// split makes t a segment boundary and returns the index of the segment
// starting at t; t is at or after at[0].
func (p *profile) split(t time.Duration) int {
	j := sort.Search(len(p.at), func(x int) bool { return p.at[x] > t }) - 1
	if p.at[j] == t {
		return j
	}
	p.at = slices.Insert(p.at, j+1, t)
	p.free = slices.Insert(p.free, j+1, p.free[j].Clone())
	return j + 1
}

// give adds what run req held back from t on.
func (p *profile) give(t time.Duration, req resource.Request, a resource.Allocation) {
	for j := p.split(t); j < len(p.at); j++ {
		p.free[j].Give(req, a)
	}
}

// take reserves req over [s, s+d); earliest said it fits there.
func (p *profile) take(s, d time.Duration, req resource.Request) {
	from := p.split(s)
	to := p.split(s + d)
	for j := from; j < to; j++ {
		a, why := resource.Fit(p.free[j], req)
		if why != "" {
			panic("sim: reservation does not fit its profile: " + why)
		}
		p.free[j].Take(req, a)
	}
}

// earliest is the first instant at or after t from which req fits for d.
func (p *profile) earliest(t, d time.Duration, req resource.Request) time.Duration {
	j := sort.Search(len(p.at), func(x int) bool { return p.at[x] > t }) - 1
	s := t
	for ; j < len(p.at); j++ {
		if p.at[j] >= s+d {
			return s
		}
		if !fits(p.free[j], req) {
			if j+1 == len(p.at) {
				return never
			}
			s = p.at[j+1]
		}
	}
	return s
}

// countProfile is a profile of free nodes: free[j] from at[j] until at[j+1],
// the last for ever.
type countProfile struct {
	at   []time.Duration
	free []int
}

// split makes t a segment boundary, as profile.split does.
func (p *countProfile) split(t time.Duration) int {
	j := sort.Search(len(p.at), func(x int) bool { return p.at[x] > t }) - 1
	if p.at[j] == t {
		return j
	}
	p.at = slices.Insert(p.at, j+1, t)
	p.free = slices.Insert(p.free, j+1, p.free[j])
	return j + 1
}

// add changes the count by n over [s, to); to is never for ever.
func (p *countProfile) add(s, to time.Duration, n int) {
	from, end := p.split(s), len(p.at)
	if to != never {
		end = p.split(to)
	}
	for j := from; j < end; j++ {
		p.free[j] += n
	}
}

// earliest is the first instant at or after t from which k nodes are
// free for d.
func (p *countProfile) earliest(t, d time.Duration, k int) time.Duration {
	j := sort.Search(len(p.at), func(x int) bool { return p.at[x] > t }) - 1
	s := t
	for ; j < len(p.at); j++ {
		if p.at[j] >= s+d {
			return s
		}
		if p.free[j] < k {
			if j+1 == len(p.at) {
				return never
			}
			s = p.at[j+1]
		}
	}
	return s
}

// wholeNodes reports whether every node is alike and holds at most one
// replica of any task of w at a time, so that free nodes can be counted.
func wholeNodes(e *engine) bool {
	if len(e.nodes) == 0 {
		return false
	}
	cap0 := e.nodes[0].cap
	if len(cap0.GPUs) > 0 || len(cap0.Devices) > 0 {
		return false
	}
	for _, n := range e.nodes {
		if n.cap.CPU != cap0.CPU || n.cap.Memory != cap0.Memory || n.cap.Disk != cap0.Disk || len(n.cap.GPUs) > 0 || len(n.cap.Devices) > 0 {
			return false
		}
	}
	for _, j := range e.w.Jobs {
		for _, t := range j.Spec.Tasks {
			a, why := resource.Fit(cap0, t.Request)
			if why != "" {
				continue // fits no node: the job fails on arrival
			}
			rest := cap0.Clone()
			rest.Take(t.Request, a)
			if fits(rest, t.Request) || t.Request.Site != "" || len(t.Request.Labels) > 0 {
				return false
			}
		}
	}
	return true
}

// conservativePass plans a reservation for every queued job and starts
// those whose reservation is now.
func (c *central) conservativePass() {
	if c.whole {
		c.conservativeCounts()
		return
	}
	e := c.e
	now := e.now
	profs := make([]*profile, len(c.free))
	for i := range c.free {
		if e.state[i] == stUp {
			profs[i] = &profile{at: []time.Duration{now}, free: []resource.Vector{c.free[i].Clone()}}
		}
	}
	for _, p := range c.run {
		if profs[p.node] == nil {
			continue
		}
		// A run past its planned end still holds its node now.
		profs[p.node].give(max(c.plannedEnd(p), now+1), p.req, p.alloc)
	}
	g := make([]time.Duration, len(c.free))
	c.reserveEach(func(u *unit, k int, d time.Duration) (time.Duration, []int) {
		t := now
		for t != never {
			n := 0
			for i, p := range profs {
				g[i] = never
				if p != nil {
					g[i] = p.earliest(t, d, u.req)
				}
				if g[i] != never {
					n++
				}
			}
			if n < k {
				return never, nil // too few nodes up: no reservation
			}
			kth := slices.Clone(g)
			slices.Sort(kth)
			if kth[k-1] == t {
				break
			}
			t = kth[k-1]
		}
		var cand []int
		for i := range g {
			if g[i] == t {
				cand = append(cand, i)
			}
		}
		slices.SortStableFunc(cand, func(a, b int) int { return c.bestFit(u.req, c.free, a, b) })
		nodes := cand[:k]
		for _, i := range nodes {
			profs[i].take(t, d, u.req)
		}
		return t, nodes
	})
}

// reserveEach walks the queue in order and asks plan for the start of
// each live unit (k replicas planned to run d) and, for a start now,
// its nodes; it starts those and drops them from the queue.
func (c *central) reserveEach(plan func(u *unit, k int, d time.Duration) (time.Duration, []int)) {
	started := map[*unit]bool{}
	for _, u := range c.queue {
		if c.dead[u.job] {
			started[u] = true
			continue
		}
		if t, nodes := plan(u, len(u.replicas), max(c.planned(u), 1)); t == c.e.now {
			c.start(u, nodes)
			started[u] = true
		}
	}
	c.dropStarted(started)
}

// conservativeCounts is conservativePass on a count of free nodes.
func (c *central) conservativeCounts() {
	e := c.e
	now := e.now
	up := 0
	busy := map[int]bool{}
	for i := range c.free {
		if e.state[i] == stUp {
			up++
		}
	}
	p := &countProfile{at: []time.Duration{now}, free: []int{0}}
	for _, r := range c.run {
		if e.state[r.node] == stUp && !busy[r.node] {
			busy[r.node] = true
			// A run past its planned end still holds its node now.
			p.add(max(c.plannedEnd(r), now+1), never, 1)
		}
	}
	p.add(now, never, up-len(busy))
	c.reserveEach(func(u *unit, k int, d time.Duration) (time.Duration, []int) {
		t := p.earliest(now, d, k)
		if t == never {
			return never, nil // too few nodes up: no reservation
		}
		p.add(t, t+d, -k)
		if t != now {
			return t, nil
		}
		return t, c.choose(u, nil)
	})
}
