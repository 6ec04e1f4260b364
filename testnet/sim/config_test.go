package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
)

// TestSimRunsNodeConfig: every simulated node runs the market
// configuration of a node with `agora node`'s default flags
// (market.Defaults(); cmd/agora TestNodeFlagsMarketDefaults holds the
// node to it), but for the node's own fields and the overrides that only
// change how many events a run takes, each where it is one
// (docs/simulator.md, "One configuration"). None decides a placement;
// a new difference fails here.
func TestSimRunsNodeConfig(t *testing.T) {
	own := []string{"Self", "Site", "Capacity", "Seed"}
	for _, tc := range []struct {
		name   string
		faults bool
		loss   float64
		want   []string
	}{
		{"no failures, no loss", false, 0, []string{"JobRetention", "JobReplicas", "LeaseEvery", "LeaseTimeout"}},
		{"message loss", false, 0.01, []string{"JobRetention", "JobReplicas"}},
		{"failures", true, 0, []string{"JobRetention"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Loss: tc.loss}.withDefaults()
			nd := node{id: "n0-0", site: "a", cap: DefaultCluster().Nodes[0].Resources}
			var got []string
			for _, f := range market.ConfigDiff(marketConfig(cfg, nd, 3, tc.faults).WithDefaults(), market.Defaults()) {
				if !slices.Contains(own, f) {
					got = append(got, f)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Fatalf("the simulator's nodes differ from a node's defaults in %v; want only %v (documented in docs/simulator.md)", got, want)
			}
		})
	}
}

// TestLeaseStretchDecidesNothing: the stretched leases of a run without
// failures or loss are an event-count optimisation only — the same
// workload with the node's leases (1s renewals, 5s lapse) starts every
// task at the same virtual time, but for a round's close moved by the
// odd millisecond where a renewal's wake-up came first.
func TestLeaseStretchDecidesNothing(t *testing.T) {
	w := tinyWorkload(t, 3, 25)
	starts := func(cfg Config) map[string][2]time.Duration {
		cfg.Cluster, cfg.Workload, cfg.Scheduler, cfg.Seed = tinyCluster(), w, "auction", 5
		in, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][2]time.Duration{}
		for _, j := range in.Jobs {
			for _, tk := range j.Tasks {
				out[fmt.Sprintf("%s/%s/%d", j.ID, tk.Name, tk.Replica)] = [2]time.Duration{tk.Start, tk.Finish}
			}
		}
		return out
	}
	def := market.Defaults()
	stretched, nodes := starts(Config{}), starts(Config{LeaseEvery: def.LeaseEvery, LeaseTimeout: def.LeaseTimeout})
	if len(stretched) == 0 {
		t.Fatal("no task ran")
	}
	var most time.Duration
	moved := 0
	for k, v := range stretched {
		d := max(nodes[k][0]-v[0], v[0]-nodes[k][0])
		if d > 0 {
			moved++
		}
		most = max(most, d)
	}
	t.Logf("%d of %d replicas started at another time, by at most %v", moved, len(stretched), most)
	// A decision moved (another node, another round) shows as seconds at
	// least; the renewals' wake-ups shift a round's close by the odd
	// millisecond (docs/simulator.md).
	if most > 100*time.Millisecond {
		t.Fatalf("a start moved by %v", most)
	}
}
