package sim

import (
	"math"
	"slices"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// The backfilling baselines — easy, easy-predicted and sjf-backfill —
// are textbook EASY (Lifka 1995; Mu'alem and Feitelson, IEEE TPDS 2001)
// on nodes instead of a processor count:
//
//   - the queue is in arrival order (sjf-backfill: shortest planned
//     runtime first) and jobs start from its front while they fit;
//   - the first job that does not fit, the head, gets a reservation: the
//     shadow time, when enough running jobs will have ended by their
//     planned ends for it to fit, on nodes that prefer those the ends
//     release (so that nodes free now stay free for backfilling);
//   - every later job that fits now starts if it will end by the shadow
//     time (then it may use any node), or fits beside the head on nodes
//     as they will be at the shadow time (the extra processors of the
//     processor-count version, per node);
//   - every replica of a job frees its node in the same event (the
//     central scheduler runs once per instant, after every event of it).
//
// A job's planned runtime is the user's estimate (easy, sjf-backfill;
// 24 h when it gives none) or the auction's runtime predictor capped by
// the estimate (easy-predicted). A running job past its planned end is
// planned to end at its estimate if that is later, else now: the
// correction Tsafrir et al. ("Backfilling using system-generated
// predictions rather than user runtime estimates", IEEE TPDS 2007) make.

// The two choices on which textbook EASY implementations differ (issue
// 44): where a run past its planned runtime is counted when the head's
// shadow time is worked out (Config.EASYOverrun), and whether the
// scheduler makes one pass per instant, after every event of it, or one
// per event (Config.EASYPass).
// On the whole SDSC log: 22,849 s of mean wait with the defaults
// (now, instant), 21,873 s with never and event, within 0.3 % of the
// 21,813 s another implementation measured (issue 44).
const (
	OverrunNow   = "now"     // it ends now: free at any shadow time (the default)
	OverrunNever = "never"   // it is not counted free at any shadow time
	PassInstant  = "instant" // one pass after every arrival and end of an instant (the default)
	PassEvent    = "event"   // a pass after each arrival and each job's end
)

// NoEstimate plans a job that gives no estimate.
const NoEstimate = 24 * time.Hour

func isBackfill(policy string) bool {
	switch policy {
	case "easy", "easy-predicted", "sjf-backfill", "easy-fairshare":
		return true
	}
	return false
}

// planned is the runtime the scheduler plans u with.
func (c *central) planned(u *unit) time.Duration {
	est := u.est
	if est <= 0 {
		est = NoEstimate
	}
	if c.policy == "easy-predicted" && c.pred != nil {
		p := c.pred.Predict(c.e.w.Jobs[u.job].Spec.Type, u.est).Runtime
		if p > 0 && p < est {
			return p
		}
	}
	return est
}

// plannedEnd is when the scheduler now expects run p to end.
func (c *central) plannedEnd(p *placed) time.Duration {
	now := c.e.now
	if p.estEnd > now {
		return p.estEnd
	}
	if p.u.est > 0 && p.start+p.u.est > now {
		return p.start + p.u.est
	}
	return now
}

// fits reports whether req fits in free, rejecting on the scalar
// resources before resource.Fit (which formats a reason on failure).
func fits(free resource.Vector, req resource.Request) bool {
	if req.CPU > free.CPU || req.Memory > free.Memory || req.Disk > free.Disk {
		return false
	}
	_, why := resource.Fit(free, req)
	return why == ""
}

// fitKey identifies requests that fit the same nodes, for counting the
// nodes that fit once per request per pass; ok is false for requests
// with devices, labels or a site, which are not counted in bulk.
type fitKey struct {
	cpu, mem, disk int64
	gpu            resource.GPURequest
}

func keyOf(r resource.Request) (fitKey, bool) {
	if len(r.Devices) > 0 || len(r.Labels) > 0 || r.Site != "" {
		return fitKey{}, false
	}
	return fitKey{r.CPU, r.Memory, r.Disk, r.GPU}, true
}

// reservation is the head's: the shadow time, the nodes it holds then,
// and what each node will have beside it then (computed when asked).
type reservation struct {
	shadow   time.Duration
	none     bool // the head can never fit: nothing to protect
	reserved []bool
	atShadow map[int]resource.Vector // free at the shadow time, nodes that release
	extra    map[int]resource.Vector // what a job may take beside the head
	head     resource.Request
}

// extraOf is what node i has beside the head at the shadow time.
func (c *central) extraOf(r *reservation, i int) resource.Vector {
	if v, ok := r.extra[i]; ok {
		return v
	}
	v, ok := r.atShadow[i]
	if !ok {
		v = c.free[i].Clone()
	} else {
		v = v.Clone()
	}
	if r.reserved[i] {
		if a, why := resource.Fit(v, r.head); why == "" {
			v.Take(r.head, a)
		}
	}
	r.extra[i] = v
	return v
}

// reserveHead plans the head's reservation from the running jobs'
// planned ends.
func (c *central) reserveHead(u *unit) *reservation {
	e := c.e
	n := len(c.free)
	r := &reservation{reserved: make([]bool, n), atShadow: map[int]resource.Vector{}, extra: map[int]resource.Vector{}, head: u.req}
	k := len(u.replicas)
	fitNow := make([]bool, n)
	fitAt := make([]bool, n)
	count := 0
	for i := range n {
		if e.state[i] == stUp && fits(c.free[i], u.req) {
			fitNow[i], fitAt[i] = true, true
			count++
		}
	}
	type end struct {
		at time.Duration
		p  *placed
	}
	ends := make([]end, 0, len(c.run))
	for _, p := range c.run {
		ends = append(ends, end{c.plannedEnd(p), p})
	}
	if c.e.cfg.EASYOverrun == OverrunNever {
		// A run past its planned runtime is not counted free at any
		// shadow time.
		for i := range ends {
			if ends[i].at <= e.now {
				ends[i].at = math.MaxInt64
			}
		}
	}
	slices.SortFunc(ends, func(a, b end) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		if a.p.node != b.p.node {
			return a.p.node - b.p.node
		}
		if a.p.key < b.p.key {
			return -1
		}
		if a.p.key > b.p.key {
			return 1
		}
		return 0
	})
	shadow := time.Duration(-1)
	for x := 0; x < len(ends); x++ {
		at := ends[x].at
		// release every run that ends at this instant
		for ; x < len(ends) && ends[x].at == at; x++ {
			p := ends[x].p
			v, ok := r.atShadow[p.node]
			if !ok {
				v = c.free[p.node].Clone()
			}
			v.Give(p.req, p.alloc)
			r.atShadow[p.node] = v
			if !fitAt[p.node] && e.state[p.node] == stUp && fits(v, u.req) {
				fitAt[p.node] = true
				count++
			}
		}
		x--
		if count >= k {
			shadow = at
			break
		}
	}
	if shadow < 0 {
		r.none, r.shadow = true, time.Duration(math.MaxInt64)
		return r
	}
	r.shadow = shadow
	// The head's nodes: those the ends release first, then the best fit.
	var cand []int
	for i := range n {
		if fitAt[i] {
			cand = append(cand, i)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int {
		if fitNow[a] != fitNow[b] {
			if fitNow[b] {
				return -1
			}
			return 1
		}
		return c.bestFit(u.req, c.free, a, b)
	})
	for _, i := range cand[:k] {
		r.reserved[i] = true
	}
	return r
}

// bestFit orders nodes a and b of free for req: the least CPU left over,
// then the fewest free GPUs, then the lower index.
func (c *central) bestFit(req resource.Request, free []resource.Vector, a, b int) int {
	la, lb := free[a].CPU-req.CPU, free[b].CPU-req.CPU
	if la != lb {
		if la < lb {
			return -1
		}
		return 1
	}
	ga, gb := free[a].GPUShare(), free[b].GPUShare()
	if ga != gb {
		if ga < gb {
			return -1
		}
		return 1
	}
	return a - b
}

// counts caches, per request, how many nodes fit it now and how many fit
// it both now and beside the head; cleared whenever a job starts.
type counts struct {
	now, beside int
}

// backfillPass is one scheduling pass of the backfilling baselines.
func (c *central) backfillPass() {
	e := c.e
	order := c.queue
	if c.policy == "easy-fairshare" {
		order = c.fairOrder()
	}
	if c.policy == "sjf-backfill" {
		order = slices.Clone(c.queue)
		slices.SortStableFunc(order, func(a, b *unit) int {
			pa, pb := c.planned(a), c.planned(b)
			if pa != pb {
				return int(pa - pb)
			}
			return a.seq - b.seq
		})
	}
	started := map[*unit]bool{}
	cache := map[fitKey]counts{}
	var res *reservation
	// count is how many nodes fit u now and (with res) beside the head.
	count := func(u *unit) counts {
		key, ok := keyOf(u.req)
		if ok {
			if k, hit := cache[key]; hit {
				return k
			}
		}
		var k counts
		for i := range c.free {
			if e.state[i] != stUp || !fits(c.free[i], u.req) {
				continue
			}
			k.now++
			if res != nil && !res.none && fits(c.extraOf(res, i), u.req) {
				k.beside++
			}
		}
		if ok {
			cache[key] = k
		}
		return k
	}
	start := func(u *unit, nodes []int) {
		if res != nil && !res.none {
			long := e.now+c.planned(u) > res.shadow
			for _, i := range nodes {
				// What node i has at the shadow time is fixed before the
				// job takes room now: one that ends by then gives it back.
				v := c.extraOf(res, i)
				if !long {
					continue
				}
				if a, why := resource.Fit(v, u.req); why == "" {
					v.Take(u.req, a)
					res.extra[i] = v
				}
			}
		}
		c.start(u, nodes)
		started[u] = true
		clear(cache)
	}
	for _, u := range order {
		if c.dead[u.job] {
			started[u] = true
			continue
		}
		k := len(u.replicas)
		if res == nil {
			if count(u).now >= k {
				start(u, c.choose(u, nil))
				continue
			}
			res = c.reserveHead(u)
			clear(cache)
			continue
		}
		short := res.none || e.now+c.planned(u) <= res.shadow
		n := count(u)
		if (short && n.now >= k) || (!short && n.beside >= k) {
			start(u, c.choose(u, res))
		}
	}
	c.dropStarted(started)
}

// choose picks u's nodes among those that fit it now (and beside the
// head when it would run past the shadow time); a job that ends by the
// shadow time takes the head's reserved nodes first, leaving the others
// to jobs that do not. The counts said enough nodes fit.
func (c *central) choose(u *unit, res *reservation) []int {
	e := c.e
	long := res != nil && !res.none && e.now+c.planned(u) > res.shadow
	var cand []int
	for i := range c.free {
		if e.state[i] != stUp || !fits(c.free[i], u.req) {
			continue
		}
		if long && !fits(c.extraOf(res, i), u.req) {
			continue
		}
		cand = append(cand, i)
	}
	slices.SortStableFunc(cand, func(a, b int) int {
		if res != nil && !res.none && !long && res.reserved[a] != res.reserved[b] {
			if res.reserved[a] {
				return -1
			}
			return 1
		}
		return c.bestFit(u.req, c.free, a, b)
	})
	return cand[:len(u.replicas)]
}
