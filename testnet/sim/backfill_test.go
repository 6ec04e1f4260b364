package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// TestBackfillStarts scripts the backfilling baselines on four
// one-processor nodes: a job ending by the head's shadow time backfills,
// one that would delay the head waits, and list scheduling (which has no
// reservation) lets it delay the head.
func TestBackfillStarts(t *testing.T) {
	// id, submit, run, procs, estimate
	jobs := [][5]int{
		{1, 0, 100, 2, 100},
		{2, 1, 100, 4, 100}, // the head: shadow time 100
		{3, 2, 50, 1, 50},   // ends by 100: backfills at once
		{4, 3, 500, 1, 500}, // no extra processor at 100: waits for the head
	}
	var b strings.Builder
	b.WriteString("; MaxProcs: 4\n")
	for _, j := range jobs {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 1 1 1 1 1 -1 -1\n", j[0], j[1], j[2], j[3], j[3], j[4])
	}
	w, err := workload.ReadSWF(strings.NewReader(b.String()), workload.SWFOptions{Name: "script.swf"})
	if err != nil {
		t.Fatal(err)
	}
	cluster := &workload.Cluster{Nodes: []workload.NodeClass{{Count: 4, Resources: resource.Vector{CPU: 1000, Memory: 1 << 30, Disk: 1 << 30}}}}
	for _, tc := range []struct {
		sched string
		want  []int // start of each job, seconds
	}{
		{"easy", []int{0, 100, 2, 200}},
		{"easy-predicted", []int{0, 100, 2, 200}}, // no history yet: the estimates
		{"sjf-backfill", []int{0, 100, 2, 200}},
		{"least-loaded", []int{0, 503, 2, 3}}, // job 4 delays the head to its end
	} {
		t.Run(tc.sched, func(t *testing.T) {
			in, err := Simulate(Config{Cluster: cluster, Workload: w, Scheduler: tc.sched, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range in.Jobs {
				if got := j.Tasks[0].Start; got != time.Duration(tc.want[i])*time.Second {
					t.Errorf("job %s started at %v, want %ds", j.ID, got, tc.want[i])
				}
			}
		})
	}
}

// TestBackfillMultiResource: on nodes of several cores a long job may
// take the cores the head leaves free at its shadow time, on the head's
// own nodes, but not more.
func TestBackfillMultiResource(t *testing.T) {
	node := resource.Vector{CPU: 4000, Memory: 16 << 30, Disk: 1 << 30}
	w := &workload.Workload{Name: "multi"}
	add := func(id string, submit, run, est time.Duration, cores int64, replicas int) {
		w.Jobs = append(w.Jobs, testJob(id, submit, run, est, resource.Request{CPU: cores * 1000}, replicas))
	}
	add("a", 0, 100*time.Second, 100*time.Second, 3, 2)         // 3 of 4 cores on both nodes until 100
	add("b", time.Second, 50*time.Second, 50*time.Second, 4, 2) // head: both whole nodes at 100
	add("c", 2*time.Second, 500*time.Second, 500*time.Second, 1, 1)
	cluster := &workload.Cluster{Nodes: []workload.NodeClass{{Count: 2, Resources: node}}}
	in, err := Simulate(Config{Cluster: cluster, Workload: w, Scheduler: "easy", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]time.Duration{}
	for _, j := range in.Jobs {
		starts[j.ID] = j.Tasks[0].Start
	}
	// c fits now (1 core free on each node) but runs past the shadow
	// time, where the head needs every core: it must wait.
	if starts["b"] != 100*time.Second || starts["c"] != 150*time.Second {
		t.Errorf("starts %v, want b at 100s and c at 150s", starts)
	}
}

// testJob is a one-task job of replicas copies (a gang when more than one).
func testJob(id string, submit, run, est time.Duration, req resource.Request, replicas int) workload.Job {
	return workload.Job{
		ID: id, User: "u", Submit: submit,
		Spec: spec.Job{Name: id, Type: "t", Priority: spec.DefaultPriority, Tasks: []spec.Task{{
			Name: "main", Command: []string{"true"}, Request: req, Replicas: replicas, Gang: replicas > 1, Estimate: est,
		}}},
		Runtimes: map[string]time.Duration{"main": run},
	}
}
