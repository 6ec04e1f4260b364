package sim

import (
	"container/heap"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/sim/internal/traces"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// refJob is an SWF job as the reference EASY sees it: a processor count,
// a submit time, a true runtime and the user's estimate.
type refJob struct {
	submit, run, est time.Duration
	procs            int
}

// refRun is a running job in the reference: its index and planned end.
type refRun struct {
	job      int
	end, est time.Duration // true end; start + estimate
}

type refEnds []refRun

func (h refEnds) Len() int           { return len(h) }
func (h refEnds) Less(i, j int) bool { return h[i].end < h[j].end }
func (h refEnds) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refEnds) Push(x any)        { *h = append(*h, x.(refRun)) }
func (h *refEnds) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}

// refEASY is EASY backfilling as Mu'alem and Feitelson describe it
// (IEEE TPDS 12(6), 2001, section 2.2), written apart from backfill.go
// and on a processor count instead of nodes, to validate it: at each
// instant every ending job frees its processors and every arriving job
// joins the queue; jobs start from the queue's front while they fit; the
// first that does not gets the shadow time (when, as running jobs end by
// their estimates, enough processors are free for it) and the extra
// processors (those free then beyond its need); a later job starts if it
// fits now and ends by the shadow time or takes no more than the extra
// processors. A running job past its estimate is expected to end now. It
// returns each job's start.
func refEASY(jobs []refJob, machine int) []time.Duration {
	start := make([]time.Duration, len(jobs))
	var queue []int
	var running refEnds
	free := machine
	next := 0
	for next < len(jobs) || len(queue) > 0 {
		// the next instant: an arrival or an end
		t := time.Duration(math.MaxInt64)
		if next < len(jobs) {
			t = jobs[next].submit
		}
		if len(running) > 0 && running[0].end < t {
			t = running[0].end
		}
		for len(running) > 0 && running[0].end == t {
			r := heap.Pop(&running).(refRun)
			free += jobs[r.job].procs
		}
		for next < len(jobs) && jobs[next].submit == t {
			queue = append(queue, next)
			next++
		}
		run := func(i int) {
			j := jobs[i]
			start[i] = t
			free -= j.procs
			heap.Push(&running, refRun{job: i, end: t + j.run, est: t + j.est})
		}
		for len(queue) > 0 && jobs[queue[0]].procs <= free {
			run(queue[0])
			queue = queue[1:]
		}
		if len(queue) == 0 {
			continue
		}
		head := jobs[queue[0]]
		ends := slices.Clone(running)
		slices.SortFunc(ends, func(a, b refRun) int { return int(max(a.est, t) - max(b.est, t)) })
		shadow, extra := time.Duration(math.MaxInt64), 0
		avail := free
		for x := 0; x < len(ends); {
			at := max(ends[x].est, t)
			for ; x < len(ends) && max(ends[x].est, t) == at; x++ {
				avail += jobs[ends[x].job].procs
			}
			if avail >= head.procs {
				shadow, extra = at, avail-head.procs
				break
			}
		}
		kept := queue[:1]
		for _, i := range queue[1:] {
			j := jobs[i]
			switch {
			case j.procs > free:
				kept = append(kept, i)
			case t+j.est <= shadow:
				run(i)
			case j.procs <= extra:
				run(i)
				extra -= j.procs
			default:
				kept = append(kept, i)
			}
		}
		queue = kept
	}
	return start
}

// refJobs turns a replayable SWF workload into the reference's jobs.
func refJobs(w *workload.Workload) []refJob {
	var out []refJob
	for _, j := range w.Jobs {
		t := j.Spec.Tasks[0]
		est := t.Estimate
		if est <= 0 {
			est = noEstimate
		}
		out = append(out, refJob{submit: j.Submit, run: j.Runtimes[t.Name], est: est, procs: max(t.Replicas, 1)})
	}
	return out
}

// TestEASYMatchesReference (issue 24, done-when 1): the simulator's easy
// on the whole KTH and SDSC logs is within 2 % of the reference EASY
// above on mean wait and mean bounded slowdown, and the figures are shown
// beside the production schedule the log records.
func TestEASYMatchesReference(t *testing.T) {
	for _, name := range []string{"KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz"} {
		t.Run(name, func(t *testing.T) {
			path := traces.File(t, name)
			limit := 0
			if testing.Short() || os.Getenv("AGORA_SWF_LIMIT") != "" {
				limit = 5000
			}
			w, err := workload.OpenSWF(path, workload.SWFOptions{Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			c, err := SWFCluster(path)
			if err != nil {
				t.Fatal(err)
			}
			machine := c.Nodes[0].Count
			in, err := Simulate(Config{Cluster: c, Workload: w, Scheduler: "easy", Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			r := metrics.Compute(in)
			// the jobs the simulator replayed, in its order
			kept := make([]workload.Job, 0, len(in.Jobs))
			byID := map[string]workload.Job{}
			for _, j := range w.Jobs {
				byID[j.ID] = j
			}
			for _, j := range in.Jobs {
				kept = append(kept, byID[j.ID])
			}
			ref := refJobs(&workload.Workload{Jobs: kept})
			starts := refEASY(ref, machine)
			var waits, slow []float64
			same := 0
			for i, j := range ref {
				wait := starts[i] - j.submit
				waits = append(waits, wait.Seconds())
				resp := wait + j.run
				slow = append(slow, math.Max(1, resp.Seconds()/max(j.run, metrics.Tau).Seconds()))
				if in.Jobs[i].Tasks[0].Start == starts[i] {
					same++
				}
			}
			refWait, refSlow := metrics.Mean(waits), metrics.Mean(slow)
			t.Logf("%s, %d jobs on %d processors: easy mean wait %.0f s, bounded slowdown %.1f; reference %.0f s, %.1f (%.2f×, %.2f×); %d of %d jobs start at the same instant; %s",
				name, len(ref), machine, r.MeanWait, r.MeanBoundedSlowdown, refWait, refSlow,
				r.MeanWait/refWait, r.MeanBoundedSlowdown/refSlow, same, len(ref), recordedLine(r))
			if r.Unfinished != 0 {
				t.Errorf("%d jobs unfinished under easy", r.Unfinished)
			}
			if d := math.Abs(r.MeanWait/refWait - 1); d > 0.02 {
				t.Errorf("mean wait %.0f s vs the reference's %.0f s: %.1f %% apart, want <= 2 %%", r.MeanWait, refWait, 100*d)
			}
			if d := math.Abs(r.MeanBoundedSlowdown/refSlow - 1); d > 0.02 {
				t.Errorf("bounded slowdown %.2f vs the reference's %.2f: %.1f %% apart, want <= 2 %%", r.MeanBoundedSlowdown, refSlow, 100*d)
			}
			if r.Recorded == nil || r.Recorded.Jobs != r.Measured {
				t.Errorf("the report's recorded schedule is %+v, want one over the %d jobs", r.Recorded, r.Measured)
			}
		})
	}
}

func recordedLine(r metrics.Report) string {
	if r.Recorded == nil {
		return "no recorded schedule"
	}
	return fmt.Sprintf("the log's production schedule: mean wait %.0f s, bounded slowdown %.1f", r.Recorded.MeanWait, r.Recorded.MeanBoundedSlowdown)
}
