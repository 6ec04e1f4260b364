package sim

import (
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/testnet/sim/refeasy"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// TestConservativeProtectsEveryJob: EASY lets a long job backfill in
// front of the second job in the queue, conservative backfilling does
// not; the same on a count of free nodes and on node profiles.
func TestConservativeProtectsEveryJob(t *testing.T) {
	req := resource.Request{CPU: 1500}
	s := time.Second
	w := &workload.Workload{Name: "protect", Jobs: []workload.Job{
		testJob("a", 0, 100*s, 100*s, req, 2),
		testJob("b", 1*s, 100*s, 100*s, req, 3), // the head: room at 100
		testJob("c", 2*s, 100*s, 100*s, req, 4), // next: room at 200
		testJob("d", 3*s, 1000*s, 1000*s, req, 1),
	}}
	node := resource.Vector{CPU: 2000, Memory: 1 << 30, Disk: 1 << 30}
	alike := &workload.Cluster{Nodes: []workload.NodeClass{{Count: 4, Resources: node}}}
	// a fifth node too small for any job: the nodes are no longer alike,
	// and conservative plans on node profiles
	mixed := &workload.Cluster{Nodes: []workload.NodeClass{{Count: 4, Resources: node}, {Count: 1, Resources: resource.Vector{CPU: 1000, Memory: 1 << 30, Disk: 1 << 30}}}}
	for _, tc := range []struct {
		name    string
		cluster *workload.Cluster
		sched   string
		want    map[string]int
	}{
		{"easy", alike, "easy", map[string]int{"a": 0, "b": 100, "c": 1003, "d": 3}},
		{"conservative/counts", alike, "conservative", map[string]int{"a": 0, "b": 100, "c": 200, "d": 300}},
		{"conservative/profiles", mixed, "conservative", map[string]int{"a": 0, "b": 100, "c": 200, "d": 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Simulate(Config{Cluster: tc.cluster, Workload: w, Scheduler: tc.sched, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range in.Jobs {
				if got := j.Tasks[0].Start; got != time.Duration(tc.want[j.ID])*s {
					t.Errorf("job %s started at %v, want %ds", j.ID, got, tc.want[j.ID])
				}
			}
		})
	}
}

// TestConservativeBackfillsAroundReservations: a short job that fits in
// a hole before the next reservation starts at once; one that would
// overlap it waits.
func TestConservativeBackfillsAroundReservations(t *testing.T) {
	req := resource.Request{CPU: 1000}
	s := time.Second
	w := &workload.Workload{Name: "holes", Jobs: []workload.Job{
		testJob("a", 0, 100*s, 100*s, req, 3),
		testJob("b", 1*s, 50*s, 50*s, req, 4),     // reserved at 100
		testJob("short", 2*s, 90*s, 90*s, req, 1), // ends by 100 on the free node: starts
		testJob("long", 3*s, 98*s, 200*s, req, 1), // would overlap b: after b
	}}
	for _, cl := range []*workload.Cluster{
		{Nodes: []workload.NodeClass{{Count: 4, Resources: resource.Vector{CPU: 1000, Memory: 1 << 30, Disk: 1 << 30}}}},
		{Nodes: []workload.NodeClass{{Count: 4, Resources: resource.Vector{CPU: 1000, Memory: 1 << 30, Disk: 1 << 30}}, {Count: 1, Resources: resource.Vector{CPU: 500, Memory: 1 << 30, Disk: 1 << 30}}}},
	} {
		in, err := Simulate(Config{Cluster: cl, Workload: w, Scheduler: "conservative", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"a": 0, "b": 100, "short": 2, "long": 150}
		for _, j := range in.Jobs {
			if got := j.Tasks[0].Start; got != time.Duration(want[j.ID])*s {
				t.Errorf("%d node classes: job %s started at %v, want %ds", len(cl.Nodes), j.ID, got, want[j.ID])
			}
		}
	}
}

// TestConservativeMatchesReference: the simulator's conservative on the
// whole KTH and SDSC logs is within 2 % of the reference (package
// refeasy, written apart: it sums spans instead of keeping a profile) on
// mean wait and bounded slowdown; they start every job at the same
// instant.
func TestConservativeMatchesReference(t *testing.T) {
	for _, name := range []string{"KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz"} {
		t.Run(name, func(t *testing.T) {
			x := replayAgainst(t, name, "conservative", refeasy.Conservative)
			t.Logf("%s, %d jobs on %d processors: conservative mean wait %.0f s, bounded slowdown %.1f; reference %.0f s, %.1f; %d of %d jobs start at the same instant",
				name, x.jobs, x.procs, x.sim.MeanWait, x.sim.MeanBoundedSlowdown, x.refWait, x.refSlow, x.same, x.jobs)
		})
	}
}
