// Package refeasy holds second implementations of EASY and conservative
// backfilling, on a processor count, written apart from the simulator's
// node-based ones to validate them (TestEASYMatchesReference,
// TestConservativeMatchesReference) and to stand beside them in the
// performance report.
package refeasy

import (
	"container/heap"
	"math"
	"slices"
	"time"
)

// Job is an SWF job as the reference EASY sees it: a submit time, a
// true runtime, the user's estimate (the runtime it is planned with) and
// a processor count.
type Job struct {
	Submit, Runtime, Estimate time.Duration
	Procs                     int
}

// running is a running job in the reference: its index and planned end.
type running struct {
	job      int
	end, est time.Duration // true end; start + estimate
}

type byEnd []running

func (h byEnd) Len() int           { return len(h) }
func (h byEnd) Less(i, j int) bool { return h[i].end < h[j].end }
func (h byEnd) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byEnd) Push(x any)        { *h = append(*h, x.(running)) }
func (h *byEnd) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}

// advance moves to the next instant, an arrival or an end, and returns
// it: the runs that end then leave inflight (ended is told of each) and
// the jobs that arrive then join the queue.
func advance(jobs []Job, next *int, queue *[]int, inflight *byEnd, ended func(running)) time.Duration {
	t := time.Duration(math.MaxInt64)
	if *next < len(jobs) {
		t = jobs[*next].Submit
	}
	if len(*inflight) > 0 && (*inflight)[0].end < t {
		t = (*inflight)[0].end
	}
	for len(*inflight) > 0 && (*inflight)[0].end == t {
		ended(heap.Pop(inflight).(running))
	}
	for *next < len(jobs) && jobs[*next].Submit == t {
		*queue = append(*queue, *next)
		*next++
	}
	return t
}

// Run is EASY backfilling as Mu'alem and Feitelson describe it
// (IEEE TPDS 12(6), 2001, section 2.2), on a processor count: at each
// instant every ending job frees its processors and every arriving job
// joins the queue; jobs start from the queue's front while they fit; the
// first that does not gets the shadow time (when, as running jobs end by
// their estimates, enough processors are free for it) and the extra
// processors (those free then beyond its need); a later job starts if it
// fits now and ends by the shadow time or takes no more than the extra
// processors. A running job past its estimate is expected to end now. It
// returns each job's start.
func Run(jobs []Job, machine int) []time.Duration {
	start := make([]time.Duration, len(jobs))
	var queue []int
	var inflight byEnd
	free := machine
	next := 0
	for next < len(jobs) || len(queue) > 0 {
		t := advance(jobs, &next, &queue, &inflight, func(r running) { free += jobs[r.job].Procs })
		run := func(i int) {
			j := jobs[i]
			start[i] = t
			free -= j.Procs
			heap.Push(&inflight, running{job: i, end: t + j.Runtime, est: t + j.Estimate})
		}
		for len(queue) > 0 && jobs[queue[0]].Procs <= free {
			run(queue[0])
			queue = queue[1:]
		}
		if len(queue) == 0 {
			continue
		}
		head := jobs[queue[0]]
		ends := slices.Clone(inflight)
		slices.SortFunc(ends, func(a, b running) int { return int(max(a.est, t) - max(b.est, t)) })
		shadow, extra := time.Duration(math.MaxInt64), 0
		avail := free
		for x := 0; x < len(ends); {
			at := max(ends[x].est, t)
			for ; x < len(ends) && max(ends[x].est, t) == at; x++ {
				avail += jobs[ends[x].job].Procs
			}
			if avail >= head.Procs {
				shadow, extra = at, avail-head.Procs
				break
			}
		}
		kept := queue[:1]
		for _, i := range queue[1:] {
			j := jobs[i]
			switch {
			case j.Procs > free:
				kept = append(kept, i)
			case t+j.Estimate <= shadow:
				run(i)
			case j.Procs <= extra:
				run(i)
				extra -= j.Procs
			default:
				kept = append(kept, i)
			}
		}
		queue = kept
	}
	return start
}
