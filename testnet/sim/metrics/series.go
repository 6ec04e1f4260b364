package metrics

import (
	"slices"
	"time"
)

// MaxSeriesPoints bounds the points of a utilization series.
const MaxSeriesPoints = 100_000

// UtilizationPoint is the share of the cluster's CPU and GPUs held by
// running tasks, averaged over the step starting At seconds after the
// first submit.
type UtilizationPoint struct {
	At  float64 `json:"t_s"`
	CPU float64 `json:"cpu"`
	GPU float64 `json:"gpu"`
}

// UtilizationSeries is utilization over time, for plots: the makespan
// cut into steps of the given length (the last one may be shorter, and
// the step is lengthened if it would give more than MaxSeriesPoints), and
// for each, the CPU and GPU held as in Utilization, averaged over the
// step. Averaged over the whole series, weighted by step length, it is
// Utilization. It is nil for an empty simulation or a step of zero or less.
func UtilizationSeries(in Input, step time.Duration) []UtilizationPoint {
	begin, end, ok := span(in)
	if !ok || end <= begin || step <= 0 {
		return nil
	}
	step = max(step, (end-begin+MaxSeriesPoints-1)/MaxSeriesPoints)
	n := int((end - begin + step - 1) / step)
	capCPU, capGPU := capacity(in.Nodes)
	// cpu[b] and gpu[b] collect resource-seconds held in bin b; runs of
	// whole bins go through the rate difference arrays.
	cpu, gpu := make([]float64, n), make([]float64, n)
	dcpu, dgpu := make([]float64, n+1), make([]float64, n+1)
	binEnd := func(b int) time.Duration { return min(begin+time.Duration(b+1)*step, end) }
	for _, j := range in.Jobs {
		for _, t := range j.Tasks {
			s, f, ok := held(t, begin, end)
			if !ok {
				continue
			}
			rc, rg := float64(t.Request.CPU), float64(gpuMilli(t.Request))
			b0, b1 := int((s-begin)/step), min(int((f-begin)/step), n-1)
			if b0 == b1 {
				sec := (f - s).Seconds()
				cpu[b0] += rc * sec
				gpu[b0] += rg * sec
				continue
			}
			head := (binEnd(b0) - s).Seconds()
			tail := (f - (begin + time.Duration(b1)*step)).Seconds()
			cpu[b0] += rc * head
			gpu[b0] += rg * head
			cpu[b1] += rc * tail
			gpu[b1] += rg * tail
			dcpu[b0+1] += rc
			dcpu[b1] -= rc
			dgpu[b0+1] += rg
			dgpu[b1] -= rg
		}
	}
	out := make([]UtilizationPoint, n)
	var rc, rg float64
	for b := range n {
		rc += dcpu[b]
		rg += dgpu[b]
		from := begin + time.Duration(b)*step
		width := (binEnd(b) - from).Seconds()
		c, g := cpu[b]+rc*width, gpu[b]+rg*width
		out[b].At = (from - begin).Seconds()
		if capCPU > 0 {
			out[b].CPU = c / (float64(capCPU) * width)
		}
		if capGPU > 0 {
			out[b].GPU = g / (float64(capGPU) * width)
		}
	}
	return out
}

// CDFPoint is one point of an empirical CDF: the share of the values at
// or below Value.
type CDFPoint struct {
	Value    float64 `json:"value"`
	Fraction float64 `json:"fraction"`
}

// CDF is the empirical distribution of values: one point per distinct
// value, ascending, with the share of values at or below it.
func CDF(values []float64) []CDFPoint {
	s := slices.Clone(values)
	slices.Sort(s)
	var out []CDFPoint
	for i, v := range s {
		p := CDFPoint{Value: v, Fraction: float64(i+1) / float64(len(s))}
		if len(out) > 0 && out[len(out)-1].Value == v {
			out[len(out)-1] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

// ResponseCDF is the CDF of the finished jobs' response times, in seconds.
func ResponseCDF(in Input) []CDFPoint {
	return CDF(finishedJobs(in, func(jt JobTimes) float64 { return jt.Response.Seconds() }))
}

// WaitCDF is the CDF of the finished jobs' waits, in seconds.
func WaitCDF(in Input) []CDFPoint {
	return CDF(finishedJobs(in, func(jt JobTimes) float64 { return jt.Wait.Seconds() }))
}

// SlowdownCDF is the CDF of the finished jobs' bounded slowdowns.
func SlowdownCDF(in Input) []CDFPoint {
	return CDF(finishedJobs(in, func(jt JobTimes) float64 { return jt.BoundedSlowdown }))
}

func finishedJobs(in Input, f func(JobTimes) float64) []float64 {
	var out []float64
	for _, jt := range Jobs(in) {
		if jt.Finished {
			out = append(out, f(jt))
		}
	}
	return out
}
