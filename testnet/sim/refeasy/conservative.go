package refeasy

import (
	"container/heap"
	"slices"
	"time"
)

// span is a stretch of time on which some processors are taken: a
// running job until its planned end, or a reservation.
type span struct {
	from, to time.Duration
	procs    int
}

// Conservative is conservative backfilling as Mu'alem and Feitelson
// describe it (IEEE TPDS 12(6), 2001, section 2.1), on a processor count:
// at each instant every queued job, in arrival order, is given the
// earliest start at which its processors are free for its whole
// estimate beside the running jobs (until their estimates; an instant
// from now for one past it) and the reservations given before it; the
// jobs whose start is now start. Reservations are made again from
// scratch at every instant, which is the paper's compression. It finds
// a start by trying the instants at which something ends and summing the
// spans that cover each instant of the window, not by keeping a profile,
// so that it shares no code or structure with the simulator's. It is
// quadratic in the queue and still replays a whole KTH or SDSC log in
// seconds. It returns each job's start.
func Conservative(jobs []Job, machine int) []time.Duration {
	start := make([]time.Duration, len(jobs))
	var queue []int
	var inflight byEnd
	next := 0
	for next < len(jobs) || len(queue) > 0 {
		t := advance(jobs, &next, &queue, &inflight, func(running) {})
		var spans []span
		for _, r := range inflight {
			spans = append(spans, span{from: t, to: max(r.est, t+1), procs: jobs[r.job].Procs})
		}
		// used is how many processors the spans take at instant x.
		used := func(x time.Duration) int {
			n := 0
			for _, s := range spans {
				if s.from <= x && x < s.to {
					n += s.procs
				}
			}
			return n
		}
		// free reports whether procs processors are free over [s, s+d):
		// the use only rises where a span begins.
		free := func(s, d time.Duration, procs int) bool {
			if used(s)+procs > machine {
				return false
			}
			for _, sp := range spans {
				if sp.from > s && sp.from < s+d && used(sp.from)+procs > machine {
					return false
				}
			}
			return true
		}
		kept := queue[:0]
		for _, i := range queue {
			j := jobs[i]
			if j.Procs > machine {
				continue
			}
			d := max(j.Estimate, 1)
			cands := []time.Duration{t}
			for _, sp := range spans {
				cands = append(cands, sp.to)
			}
			slices.Sort(cands)
			at := time.Duration(-1)
			for _, c := range cands {
				if free(c, d, j.Procs) {
					at = c
					break
				}
			}
			spans = append(spans, span{from: at, to: at + d, procs: j.Procs})
			if at == t {
				start[i] = t
				heap.Push(&inflight, running{job: i, end: t + j.Runtime, est: t + j.Estimate})
				continue
			}
			kept = append(kept, i)
		}
		queue = kept
	}
	return start
}
