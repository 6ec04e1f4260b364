package sim

import (
	"testing"

	"github.com/agora-sched/agora/testnet/sim/internal/traces"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// The KTH log replayed on its machine (first 200 jobs, gangs of up to 100
// one-CPU replicas): the auction's bounded slowdown is no worse than
// EASY's, its utilization at least 0.95× EASY's, and its runtime
// predictions beat the users' estimates. docs/performance.md has the
// 700-job figures and SDSC, where the auction still misses.
func TestKTHAuctionVersusEasy(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 200 jobs")
	}
	path := traces.File(t, "KTH-SP2-1996-2.1-cln.swf.gz")
	c, err := SWFCluster(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.OpenSWF(path, workload.SWFOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(Config{Cluster: c, Workload: w, Scheduler: "auction", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Run(Config{Cluster: c, Workload: w, Scheduler: "easy", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("auction: bsld %.2f util %.3f prediction MAPE %.2f (estimates %.2f), %d messages; easy: bsld %.2f util %.3f",
		a.MeanBoundedSlowdown, a.Utilization, a.PredictionMAPE, a.UserEstimateMAPE, a.Messages, e.MeanBoundedSlowdown, e.Utilization)
	if a.MeanBoundedSlowdown > e.MeanBoundedSlowdown {
		t.Errorf("auction bounded slowdown %.2f > easy's %.2f", a.MeanBoundedSlowdown, e.MeanBoundedSlowdown)
	}
	if a.Utilization < 0.95*e.Utilization {
		t.Errorf("auction utilization %.3f < 0.95 × easy's %.3f", a.Utilization, e.Utilization)
	}
	if a.PredictionMAPE >= a.UserEstimateMAPE {
		t.Errorf("prediction MAPE %.2f does not beat the users' estimates' %.2f", a.PredictionMAPE, a.UserEstimateMAPE)
	}
}

// On the synthetic mix at 80 % load on a heterogeneous cluster the
// auction's mean response is within 1.10× of the sjf-oracle scheduler's
// (docs/performance.md has the 1,000-node run).
func TestAuctionWithinTenPercentOfOmniscient(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 1,000 jobs")
	}
	c := HeteroCluster(100)
	src, err := workload.ParseSpec("synthetic:1,jobs=1000,load=0.8")
	if err != nil {
		t.Fatal(err)
	}
	w, err := src.Open(c.Total(), LargestNode(c))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(Config{Cluster: c, Workload: w, Scheduler: "auction", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(Config{Cluster: c, Workload: w, Scheduler: "sjf-oracle", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ratio := a.MeanResponse / o.MeanResponse
	t.Logf("auction %.0f s, sjf-oracle %.0f s: %.3f×; %d messages", a.MeanResponse, o.MeanResponse, ratio, a.Messages)
	if ratio > 1.10 {
		t.Errorf("auction mean response %.3f× sjf-oracle's, want <= 1.10", ratio)
	}
}
