package sim

import (
	"fmt"
	"math"
	"os"
	"testing"

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

// TestEASYMatchesReference (issue 24, done-when 1): the simulator's easy
// on the whole KTH and SDSC logs is within 2 % of the reference EASY
// (package refeasy, written apart on a processor count) on mean wait and mean bounded slowdown, and the figures are shown
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
			starts := refeasy.Run(ref, machine)
			var waits, slow []float64
			same := 0
			for i, j := range ref {
				wait := starts[i] - j.Submit
				waits = append(waits, wait.Seconds())
				resp := wait + j.Runtime
				slow = append(slow, math.Max(1, resp.Seconds()/max(j.Runtime, metrics.Tau).Seconds()))
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
