package metrics

import (
	"fmt"
	"slices"
)

// Group is the job figures of one part of a run's jobs.
type Group struct {
	// Label names the part: a width range ("65+"), a class, "recorded".
	Label string `json:"label"`
	// Jobs counts the finished measured jobs of the part, Unfinished the
	// part's jobs that never finished (measured or not: a starved job
	// has no submit window to hide in).
	Jobs       int `json:"jobs"`
	Unfinished int `json:"unfinished"`
	// The figures are over the finished jobs, in seconds.
	MeanWait            float64 `json:"mean_wait_s"`
	P99Wait             float64 `json:"p99_wait_s"`
	MaxWait             float64 `json:"max_wait_s"`
	MeanBoundedSlowdown float64 `json:"mean_bounded_slowdown"`
}

// WidthBounds are the upper bounds of the width groups: 1, 2–8, 9–32,
// 33–64 and 65 and more.
var WidthBounds = []int{1, 8, 32, 64}

// maxClasses bounds the per-class breakdown: logs whose classes are
// users (thousands of them) get none.
const maxClasses = 16

type acc struct {
	waits, slow []float64
	unfinished  int
}

func (a *acc) group(label string) Group {
	g := Group{Label: label, Jobs: len(a.waits), Unfinished: a.unfinished,
		MeanWait: Mean(a.waits), P99Wait: Percentile(a.waits, 99), MeanBoundedSlowdown: Mean(a.slow)}
	for _, w := range a.waits {
		g.MaxWait = max(g.MaxWait, w)
	}
	return g
}

func widthLabel(w int) string {
	lo := 1
	for _, b := range WidthBounds {
		if w <= b {
			if lo == b {
				return fmt.Sprint(b)
			}
			return fmt.Sprintf("%d-%d", lo, b)
		}
		lo = b + 1
	}
	return fmt.Sprintf("%d+", lo)
}

// width is the most replicas of any of a job's tasks.
func width(j JobRecord) int {
	n := map[string]int{}
	w := 0
	for _, t := range j.Tasks {
		n[t.Name]++
		w = max(w, n[t.Name])
	}
	return w
}

// breakdowns groups the measured jobs by width and by class, and gives
// the figures of the schedule the trace records for them.
func breakdowns(in Input, times []JobTimes) (byWidth, byClass []Group, recorded *Group) {
	widths := map[string]*acc{}
	classes := map[string]*acc{}
	var rec acc
	hasRec := false
	for i, jt := range times {
		j := in.Jobs[i]
		wl := widthLabel(width(j))
		if widths[wl] == nil {
			widths[wl] = &acc{}
		}
		if classes[j.Class] == nil {
			classes[j.Class] = &acc{}
		}
		if !jt.Finished {
			widths[wl].unfinished++
			classes[j.Class].unfinished++
			continue
		}
		if !in.measured(jt.Submit) {
			continue
		}
		for _, a := range []*acc{widths[wl], classes[j.Class]} {
			a.waits = append(a.waits, jt.Wait.Seconds())
			a.slow = append(a.slow, jt.BoundedSlowdown)
		}
		if j.Recorded {
			hasRec = true
			rec.waits = append(rec.waits, j.RecordedWait.Seconds())
			rec.slow = append(rec.slow, boundedSlowdown(j.RecordedWait+jt.Runtime, jt.Runtime))
		}
	}
	var labels []string
	lo := 1
	for _, b := range WidthBounds {
		labels = append(labels, widthLabel(b))
		lo = b + 1
	}
	labels = append(labels, widthLabel(lo))
	for _, l := range labels {
		if a := widths[l]; a != nil {
			byWidth = append(byWidth, a.group(l))
		}
	}
	if len(classes) > 1 && len(classes) <= maxClasses {
		names := make([]string, 0, len(classes))
		for c := range classes {
			names = append(names, c)
		}
		slices.Sort(names)
		for _, c := range names {
			byClass = append(byClass, classes[c].group(c))
		}
	}
	if hasRec {
		g := rec.group("recorded")
		recorded = &g
	}
	return byWidth, byClass, recorded
}
