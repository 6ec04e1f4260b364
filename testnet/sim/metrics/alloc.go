package metrics

import (
	"cmp"
	"slices"
	"time"
)

// AllocationPoint is one point of the GPU allocation curve, both as
// fractions of the cluster's GPUs: the GPU requests arrived so far, and
// the GPUs allocated at that moment to the requests arrived so far.
type AllocationPoint struct {
	Arrived   float64 `json:"arrived"`
	Allocated float64 `json:"allocated"`
}

// GPUAllocationRatio is the GPU allocation ratio of Weng et al., "Beware
// of Fragmentation" (USENIX ATC '23), the figure the README quotes for
// the Alibaba v2023 trace: the share of the cluster's GPUs allocated when
// the arriving GPU requests reach 100 % of the cluster's GPUs.
//
// In the paper, tasks sampled from the trace arrive one after another and
// never depart; each is placed at once or fails. With no departures,
// every GPU request that does not fit is lost to fragmentation (or to a
// CPU or memory shortage on the node with free GPUs), so a perfect packer
// scores 100 % and the paper's schedulers 86–95 %.
//
// Here: the task records that ask for GPUs are taken in arrival order
// (Submit, then job order, then task order); a whole GPU counts 1 and a
// share its fraction. Arrival k is the first at which the cumulative
// request reaches the cluster's GPUs (the last arrival, if they never
// do). The ratio is the GPU request of arrivals 1..k that is running at
// arrival k's submit time — started at or before it and not finished by
// it — over the cluster's GPUs. When the simulator replays arrivals
// without departures, as the paper does, this is exactly the paper's
// figure; with departures it is the allocation at the moment demand first
// matches capacity, which is the same measure of how well placement
// packs, though not comparable with the paper's numbers. It is 0 for a
// cluster without GPUs or a workload without GPU requests.
func GPUAllocationRatio(in Input) float64 {
	curve, capGPU := allocationCurve(in)
	if capGPU == 0 || len(curve) == 0 {
		return 0
	}
	for _, p := range curve {
		if p.Arrived >= 1 {
			return p.Allocated
		}
	}
	return curve[len(curve)-1].Allocated
}

// GPUAllocationCurve is the allocation ratio after each GPU-requesting
// arrival, the curve of the paper's Figure 7 (allocated against arrived,
// both as fractions of the cluster's GPUs); see GPUAllocationRatio.
func GPUAllocationCurve(in Input) []AllocationPoint {
	curve, _ := allocationCurve(in)
	return curve
}

type gpuTask struct {
	submit, start, finish time.Duration
	started, finished     bool
	milli                 int64
	job, task             int
}

func allocationCurve(in Input) ([]AllocationPoint, int64) {
	_, capGPU := capacity(in.Nodes)
	if capGPU == 0 {
		return nil, 0
	}
	var ts []gpuTask
	for ji, j := range in.Jobs {
		for ti, t := range j.Tasks {
			m := gpuMilli(t.Request)
			if m <= 0 {
				continue
			}
			g := gpuTask{submit: t.Submit, start: max(t.Start, t.Submit), finish: t.Finish,
				started: t.Started, finished: t.Started && t.Finished, milli: m, job: ji, task: ti}
			ts = append(ts, g)
		}
	}
	slices.SortStableFunc(ts, func(a, b gpuTask) int {
		return cmp.Or(cmp.Compare(a.submit, b.submit), cmp.Compare(a.job, b.job), cmp.Compare(a.task, b.task))
	})
	// Sweep the arrivals in order, with the starts and finishes that
	// happen by each arrival's time: a task counts from its start (if it
	// has arrived) until its finish.
	var starts, finishes []int
	for i, t := range ts {
		if t.started {
			starts = append(starts, i)
		}
		if t.finished {
			finishes = append(finishes, i)
		}
	}
	slices.SortStableFunc(starts, func(a, b int) int { return cmp.Compare(ts[a].start, ts[b].start) })
	slices.SortStableFunc(finishes, func(a, b int) int { return cmp.Compare(ts[a].finish, ts[b].finish) })
	const (
		waiting = iota
		running
		gone
	)
	state := make([]int, len(ts))
	var arrived, allocated int64
	ps, pf := 0, 0
	curve := make([]AllocationPoint, 0, len(ts))
	for i, t := range ts {
		now := t.submit
		arrived += t.milli
		for ps < len(starts) {
			s := starts[ps]
			if ts[s].start > now || (ts[s].start == now && s > i) {
				break
			}
			if state[s] == waiting {
				state[s] = running
				allocated += ts[s].milli
			}
			ps++
		}
		for pf < len(finishes) && ts[finishes[pf]].finish <= now {
			f := finishes[pf]
			if state[f] == running {
				allocated -= ts[f].milli
			}
			state[f] = gone
			pf++
		}
		curve = append(curve, AllocationPoint{
			Arrived:   float64(arrived) / float64(capGPU),
			Allocated: float64(allocated) / float64(capGPU),
		})
	}
	return curve, capGPU
}
