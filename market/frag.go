package market

import (
	"math"
	"sort"

	"github.com/agora-sched/agora/devices/resource"
)

// GPU fragmentation, after Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"
// (USENIX ATC '23). A node's free GPU share is fragmented for a kind of
// task when that task could not use it: the task does not fit the node at
// all (too little CPU, or no GPU with enough free), or the share sits on
// GPUs the task cannot take (a card with less free than the task's share;
// a partly used card for a task that wants whole cards). A node's
// fragmentation is the expectation of that over the mix of tasks the
// cluster runs; placing a task so that it grows least keeps room usable
// for the tasks still to come.
//
// FGD schedules centrally with the workload's mix given. Here every node
// learns the mix from the calls for bids it sees (demandMix), and a bidder
// scores its own fragmentation growth (ScoreInput.FragDelta): no node
// needs more than what it already hears.

// mixClasses bounds the task kinds a demandMix keeps; the lightest is
// forgotten first.
const mixClasses = 32

// mixHalfLife is how many observations halve the weight of older ones, so
// that the mix follows a changing workload.
const mixHalfLife = 512

// demandClass is one kind of task request: its CPU and its GPU demand,
// with the weight of its observations.
type demandClass struct {
	cpu   int64   // millicores
	count int     // whole GPUs (0 with a share, or for no GPU)
	share int64   // share of one GPU, thousandths (0 for whole GPUs or none)
	w     float64 // decayed number of observations
}

func (d demandClass) less(o demandClass) bool {
	if d.cpu != o.cpu {
		return d.cpu < o.cpu
	}
	if d.count != o.count {
		return d.count < o.count
	}
	return d.share < o.share
}

// classOf is req's demand class (weight 0).
func classOf(req resource.Request) demandClass {
	g := req.GPU
	switch {
	case g.Share > 0 && g.Count <= 1:
		return demandClass{cpu: req.CPU, share: g.Share}
	case g.Count > 0:
		return demandClass{cpu: req.CPU, count: g.Count}
	}
	return demandClass{cpu: req.CPU}
}

// demandMix is a node's estimate of the cluster's GPU task mix: the GPU
// requests of the calls for bids it saw, the recent ones weighing more.
// It is deterministic: classes are kept sorted, and every sum runs in
// that order.
//
// Tasks without GPUs are left out, unlike FGD's. To such a task every
// free share is a fragment, so its class only adds −(share placed) ×
// (its weight) to every placement's growth on a node: nothing to choose
// between on one node, but between nodes, whose mixes are learned apart,
// it is a bias that grows with the bidders. On the Alibaba trace at
// d = 32 it cost 1.3 points (0.924 against 0.937); at d = 3 the two were
// alike.
type demandMix struct {
	classes []demandClass // sorted by less
	total   float64
	seen    int // observations since the last halving
}

// observe adds one request to the mix.
func (x *demandMix) observe(req resource.Request) {
	k := classOf(req)
	i := sort.Search(len(x.classes), func(i int) bool { return !x.classes[i].less(k) })
	if i < len(x.classes) && !k.less(x.classes[i]) {
		x.classes[i].w++
	} else {
		k.w = 1
		x.classes = append(x.classes, demandClass{})
		copy(x.classes[i+1:], x.classes[i:])
		x.classes[i] = k
		if len(x.classes) > mixClasses {
			x.evictLightest(i)
		}
	}
	x.total++
	if x.seen++; x.seen >= mixHalfLife {
		x.seen = 0
		x.total = 0
		for i := range x.classes {
			x.classes[i].w /= 2
			x.total += x.classes[i].w
		}
	}
}

// evictLightest drops the lightest class other than the one at keep (just
// observed), the first in order among equals.
func (x *demandMix) evictLightest(keep int) {
	j := -1
	for i, c := range x.classes {
		if i != keep && (j < 0 || c.w < x.classes[j].w) {
			j = i
		}
	}
	x.total -= x.classes[j].w
	x.classes = append(x.classes[:j], x.classes[j+1:]...)
}

// wantsGPUs reports whether any class of the mix asks for a GPU.
func (x *demandMix) wantsGPUs() bool {
	for _, c := range x.classes {
		if c.count > 0 || c.share > 0 {
			return true
		}
	}
	return false
}

// fragmentation is the expected GPU share (thousandths) of free that a
// task drawn from the mix could not use.
func (x *demandMix) fragmentation(free resource.Vector) float64 {
	if x.total <= 0 || len(free.GPUs) == 0 {
		return 0
	}
	var f float64
	for _, c := range x.classes {
		f += c.w * float64(fragmentFor(free, c))
	}
	return f / x.total
}

// fragmentFor is the free GPU share of free that a task of class c could
// not use.
func fragmentFor(free resource.Vector, c demandClass) int64 {
	all := free.GPUShare()
	if c.cpu > free.CPU || (c.count == 0 && c.share == 0) {
		return all // the task does not fit, or uses no GPU at all
	}
	var frag int64
	if c.share > 0 {
		usable := false
		for _, g := range free.GPUs {
			if g.Free < c.share {
				frag += g.Free
			} else {
				usable = true
			}
		}
		if !usable {
			return all
		}
		return frag
	}
	whole := 0
	for _, g := range free.GPUs {
		if g.Free >= resource.WholeGPU {
			whole++
		} else {
			frag += g.Free
		}
	}
	if whole < c.count {
		return all
	}
	return frag
}

// fragDelta is how much placing req on free, on the cards fit picks,
// grows the node's fragmentation under the mix (thousandths of a GPU;
// negative when the task fills a fragment), and false when req asks for
// no GPU, does not fit free now, or the mix says nothing about GPUs.
func (x *demandMix) fragDelta(free resource.Vector, req resource.Request) (float64, bool) {
	if !req.GPU.Wants() || len(free.GPUs) == 0 || !x.wantsGPUs() {
		return 0, false
	}
	_, growth, why := x.place(free, req)
	return growth, why == ""
}

// fit is resource.Fit, except that a share of one GPU goes to the card
// where it grows the node's fragmentation under the mix least (FGD's
// choice of card; Fit's card when it is among the least), rather than
// simply to the tightest card. Whole cards, and any request while the mix
// says nothing about GPUs, get Fit's choice.
func (x *demandMix) fit(free resource.Vector, req resource.Request) (resource.Allocation, string) {
	if !x.wantsGPUs() || req.GPU.Share <= 0 || req.GPU.Count > 1 {
		return resource.Fit(free, req)
	}
	a, _, why := x.place(free, req)
	return a, why
}

// place is fit's allocation with the fragmentation growth it causes.
func (x *demandMix) place(free resource.Vector, req resource.Request) (resource.Allocation, float64, string) {
	a, why := resource.Fit(free, req)
	if why != "" {
		return a, 0, why
	}
	base := x.fragmentation(free)
	growth := func(alloc resource.Allocation) float64 {
		after := free.Clone()
		after.Take(req, alloc)
		return x.fragmentation(after) - base
	}
	least := growth(a)
	if req.GPU.Share <= 0 || req.GPU.Count > 1 || len(a.GPUs) != 1 {
		return a, least, ""
	}
	for _, g := range free.GPUs {
		if g.Index == a.GPUs[0] || g.Free < req.GPU.Share || !req.GPU.Matches(g) {
			continue
		}
		alt := a
		alt.GPUs = []int{g.Index}
		if d := growth(alt); d < least {
			a, least = alt, d
		}
	}
	return a, least, ""
}

// FragScore maps a fragmentation growth (thousandths of a GPU) to [0, 1]:
// 1/2 when placing the task leaves the node's fragmentation as it was,
// towards 1 as it fills fragments, towards 0 as it breaks usable cards.
// One whole GPU of growth scores 0.12, one GPU filled 0.88.
func FragScore(delta float64) float64 {
	return 1 / (1 + math.Exp(2*delta/resource.WholeGPU))
}
