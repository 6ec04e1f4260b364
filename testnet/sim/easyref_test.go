package sim

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/sim/internal/traces"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/refeasy"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// refJobs turns a replayable SWF workload into the reference's jobs.
func refJobs(w *workload.Workload) []refeasy.Job {
	var out []refeasy.Job
	for _, j := range w.Jobs {
		t := j.Spec.Tasks[0]
		est := t.Estimate
		if est <= 0 {
			est = NoEstimate
		}
		out = append(out, refeasy.Job{Submit: j.Submit, Runtime: j.Runtimes[t.Name], Estimate: est, Procs: max(t.Replicas, 1)})
	}
	return out
}

// refReplay is one SWF log replayed by the simulator under a policy and
// by a reference scheduler over the same jobs.
type refReplay struct {
	sim               metrics.Report
	refWait, refSlow  float64
	same, jobs, procs int
}

// replayAgainst replays the log name (its first 5,000 jobs in -short
// mode or with AGORA_SWF_LIMIT set) under the simulator's policy sched
// and under ref, and compares them job for job.
func replayAgainst(t *testing.T, name, sched string, ref func([]refeasy.Job, int) []time.Duration) refReplay {
	t.Helper()
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
	in, err := Simulate(Config{Cluster: c, Workload: w, Scheduler: sched, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := refReplay{sim: metrics.Compute(in), jobs: len(in.Jobs), procs: machine}
	// the jobs the simulator replayed, in its order
	byID := map[string]workload.Job{}
	for _, j := range w.Jobs {
		byID[j.ID] = j
	}
	kept := make([]workload.Job, 0, len(in.Jobs))
	for _, j := range in.Jobs {
		kept = append(kept, byID[j.ID])
	}
	jobs := refJobs(&workload.Workload{Jobs: kept})
	starts := ref(jobs, machine)
	var waits, slow []float64
	for i, j := range jobs {
		wait := starts[i] - j.Submit
		waits = append(waits, wait.Seconds())
		slow = append(slow, math.Max(1, (wait+j.Runtime).Seconds()/max(j.Runtime, metrics.Tau).Seconds()))
		if in.Jobs[i].Tasks[0].Start == starts[i] {
			out.same++
		}
	}
	out.refWait, out.refSlow = metrics.Mean(waits), metrics.Mean(slow)
	if out.sim.Unfinished != 0 {
		t.Errorf("%d jobs unfinished under %s", out.sim.Unfinished, sched)
	}
	if d := math.Abs(out.sim.MeanWait/out.refWait - 1); d > 0.02 {
		t.Errorf("mean wait %.0f s vs the reference's %.0f s: %.1f %% apart, want <= 2 %%", out.sim.MeanWait, out.refWait, 100*d)
	}
	if d := math.Abs(out.sim.MeanBoundedSlowdown/out.refSlow - 1); d > 0.02 {
		t.Errorf("bounded slowdown %.2f vs the reference's %.2f: %.1f %% apart, want <= 2 %%", out.sim.MeanBoundedSlowdown, out.refSlow, 100*d)
	}
	return out
}

// TestEASYMatchesReference (issue 24, done-when 1): the simulator's easy
// on the whole KTH and SDSC logs is within 2 % of the reference EASY
// (package refeasy, written apart on a processor count) on mean wait and
// mean bounded slowdown, and the figures are shown beside the
// production schedule the log records.
func TestEASYMatchesReference(t *testing.T) {
	for _, name := range []string{"KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz"} {
		t.Run(name, func(t *testing.T) {
			x := replayAgainst(t, name, "easy", refeasy.Run)
			r := x.sim
			t.Logf("%s, %d jobs on %d processors: easy mean wait %.0f s, bounded slowdown %.1f; reference %.0f s, %.1f (%.2f×, %.2f×); %d of %d jobs start at the same instant; %s",
				name, x.jobs, x.procs, r.MeanWait, r.MeanBoundedSlowdown, x.refWait, x.refSlow,
				r.MeanWait/x.refWait, r.MeanBoundedSlowdown/x.refSlow, x.same, x.jobs, recordedLine(r))
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
