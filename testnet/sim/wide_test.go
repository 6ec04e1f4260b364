package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// TestWideSWFJobs (issue 24, done-when 4): an SWF log holding a job of
// 306 processors on a 338-processor machine replays whole under every
// scheduler; a job wider than the machine is skipped and counted, not the
// whole log refused.
func TestWideSWFJobs(t *testing.T) {
	var b strings.Builder
	b.WriteString("; MaxProcs: 338\n")
	// job submit wait run alloc cpu mem req-procs req-time req-mem status user group exe queue partition preceding think
	line := func(id, submit, run, procs int) {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d 1 1 1 1 -1 -1\n", id, submit, run, procs, procs, 2*run, id%3)
	}
	line(1, 0, 600, 16)
	line(2, 10, 3600, 306) // waits for job 1's 16 processors
	line(3, 20, 300, 40)
	line(4, 30, 900, 1)
	line(5, 40, 100, 400) // wider than the machine
	line(6, 50, 60, 338)  // the whole machine
	w, err := workload.ReadSWF(strings.NewReader(b.String()), workload.SWFOptions{Name: "wide.swf"})
	if err != nil {
		t.Fatal(err)
	}
	cluster := &workload.Cluster{Nodes: []workload.NodeClass{{Count: 338, Resources: resource.Vector{CPU: 1000, Memory: 1 << 30, Disk: 1 << 30}}}}
	for _, s := range Schedulers {
		t.Run(s, func(t *testing.T) {
			in, err := Simulate(Config{Cluster: cluster, Workload: w, Scheduler: s, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			r := metrics.Compute(in)
			if r.Jobs != 5 {
				t.Fatalf("%d jobs replayed, want 5 (the 400-processor one skipped)", r.Jobs)
			}
			for _, jt := range metrics.Jobs(in) {
				if !jt.Finished {
					t.Fatalf("job %s did not finish", jt.ID)
				}
			}
			if r.Skipped != 1 || in.SkipReasons["wider than the machine"] != 1 {
				t.Fatalf("skipped %d: %v", r.Skipped, in.SkipReasons)
			}
		})
	}
}

// TestPipelineInSimulator: tasks that hand each other data run to the end
// in the simulator too (outputs are modelled as kept where made, no bytes
// moved), under the auction and the central schedulers.
func TestPipelineInSimulator(t *testing.T) {
	task := func(name string, after ...string) spec.Task {
		return spec.Task{Name: name, Command: []string{"true"}, Request: resource.Request{CPU: 1000}, Retries: 0, Replicas: 1, After: after}
	}
	prep, use := task("prep"), task("use", "prep")
	prep.Outputs = []spec.Output{{Path: "out.bin"}}
	use.Inputs = []spec.Input{{From: "prep", Output: "out.bin", Path: "in.bin"}}
	w := &workload.Workload{Name: "pipeline"}
	for i := range 4 {
		id := fmt.Sprintf("p%d", i)
		w.Jobs = append(w.Jobs, workload.Job{ID: id, User: "u", Submit: time.Duration(i) * time.Second,
			Spec:     spec.Job{Name: id, Type: "pipe", Priority: 5, Tasks: []spec.Task{prep, use}},
			Runtimes: map[string]time.Duration{"prep": time.Minute, "use": time.Minute}})
	}
	for _, s := range []string{"auction", "easy"} {
		in, err := Simulate(Config{Cluster: tinyCluster(), Workload: w, Scheduler: s, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, jt := range metrics.Jobs(in) {
			if !jt.Finished {
				t.Fatalf("%s: job %s did not finish", s, jt.ID)
			}
		}
	}
}
