package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/sim"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// The job list BenchmarkSimVsReal runs: simRealJobs jobs on simRealNodes
// nodes of simRealNode, arriving as a Poisson stream at about the
// cluster's capacity so that a queue forms.
const (
	simRealNodes = 6
	simRealJobs  = 72
	simRealNode  = "cpu: 4\nmemory: 8GiB\ngpus: []\n"
	simRealLoad  = 1.0 // offered CPU-seconds per second over the cluster's cores
	simRealSeeds = 3   // simulator seeds the real run is compared with
)

// simRealJob is one job of the list: its spec as `agora submit` takes it,
// when it is submitted (from the first submit) and how long its tasks
// sleep.
type simRealJob struct {
	Spec   map[string]any
	Submit time.Duration
	Sleep  time.Duration
}

// simRealList draws the job list: single tasks of 1, 2 and 4 cores (a
// whole node), gangs of 3 × 1 and 4 × 2 cores, each sleeping 1–8 s, with
// a job type per shape so that runtime prediction learns as a node's
// does, no estimates and no retries.
func simRealList(seed int64) []simRealJob {
	rng := rand.New(rand.NewSource(seed))
	type shape struct {
		name     string
		cpu      int
		replicas int
		weight   float64
	}
	shapes := []shape{{"one", 1, 1, 0.40}, {"two", 2, 1, 0.20}, {"whole", 4, 1, 0.10}, {"gang3", 1, 3, 0.15}, {"gang4", 2, 4, 0.15}}
	var meanCPU float64
	for _, s := range shapes {
		meanCPU += s.weight * float64(s.cpu*s.replicas)
	}
	const meanSleep = 4.5 // seconds: uniform over 1..8
	rate := simRealLoad * float64(4*simRealNodes) / (meanCPU * meanSleep)
	var at time.Duration
	out := make([]simRealJob, 0, simRealJobs)
	for i := range simRealJobs {
		x, s := rng.Float64(), shapes[len(shapes)-1]
		for _, c := range shapes {
			if x < c.weight {
				s = c
				break
			}
			x -= c.weight
		}
		sleep := time.Duration(1+rng.Intn(8)) * time.Second
		task := map[string]any{
			"name":      "work",
			"command":   []string{"sleep", fmt.Sprint(int(sleep.Seconds()))},
			"resources": map[string]any{"cpu": s.cpu, "memory": "256MiB"},
			"retries":   0,
		}
		if s.replicas > 1 {
			task["replicas"], task["gang"] = s.replicas, true
		}
		out = append(out, simRealJob{
			Spec:   map[string]any{"name": fmt.Sprintf("j%02d-%s", i, s.name), "type": s.name, "tasks": []any{task}},
			Submit: at,
			Sleep:  sleep,
		})
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
	}
	return out
}

// BenchmarkSimVsReal (issue 44, done-when 5): the same job list on real
// nodes and in the simulator. Six `agora node` processes on loopback run
// as a user runs them (default flags: the sandbox, the production advert
// interval), with the resources simRealNode; the jobs of simRealList are
// posted at their offsets to the nodes in turn. The simulator then
// replays the list with the submit times the real managers recorded, on
// the same cluster, with the node's market configuration, for
// simRealSeeds seeds. It reports the real and simulated mean wait and
// makespan and their ratios, and fails when either ratio (real over the
// simulator's mean over seeds) is outside [1/1.3, 1.3].
//
//	go test -run '^$' -bench SimVsReal -benchtime 1x ./cmd/agora/
func BenchmarkSimVsReal(b *testing.B) {
	for range b.N {
		simVsReal(b)
	}
}

func simVsReal(b *testing.B) {
	list := simRealList(1)
	res := writeFile(b, "node.yaml", simRealNode)
	nodes := make([]*proc, simRealNodes)
	var first string
	for i := range nodes {
		args := []string{"--resources", res, "--label", fmt.Sprintf("name=n%d", i)}
		if i > 0 {
			args = append(args, "--bootstrap", first)
		}
		p, err := launchNodeFlags(b, b.TempDir(), args...)
		if err != nil {
			b.Fatal(err)
		}
		nodes[i] = p
		if i == 0 {
			first = tcpAddr(b, p.id())
		}
	}
	waitMesh(b, nodes, 30*time.Second)

	// Submit each job at its offset, to the nodes in turn.
	type posted struct {
		id   string
		node int
	}
	sent := make([]posted, len(list))
	t0 := time.Now()
	for i, j := range list {
		time.Sleep(time.Until(t0.Add(j.Submit)))
		body, err := json.Marshal(j.Spec)
		if err != nil {
			b.Fatal(err)
		}
		n := i % len(nodes)
		var r submitted
		if err := newClient(nodes[n].api).send("POST", "/v1/jobs", "application/json", body, &r); err != nil {
			b.Fatalf("submitting %s to node %d: %v", j.Spec["name"], n, err)
		}
		sent[i] = posted{r.ID, n}
	}

	// Wait for every job to end, then read its record from its manager.
	final := make([]jobStatus, len(list))
	done := 0
	deadline := time.Now().Add(10 * time.Minute)
	for done < len(list) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d jobs ended in 10 minutes", done, len(list))
		}
		time.Sleep(500 * time.Millisecond)
		for i, s := range sent {
			if final[i].ID != "" {
				continue
			}
			var st jobStatus
			if err := newClient(nodes[s.node].api).do("GET", jobPath(s.id, ""), nil, &st); err != nil {
				b.Fatal(err)
			}
			if terminal(st.State) {
				if st.State != "succeeded" {
					b.Fatalf("job %s (%s): %s %s", s.id, list[i].Spec["name"], st.State, st.Reason)
				}
				final[i] = st
				done++
			}
		}
	}
	real, submits := simRealRecords(b, list, final)

	// The simulator on the same list, cluster and submit times.
	specs := make([]map[string]any, len(list))
	for i, j := range list {
		e := map[string]any{"submit": submits[i].String(), "runtime": j.Sleep.String()}
		for k, v := range j.Spec {
			e[k] = v
		}
		specs[i] = e
	}
	data, err := json.Marshal(specs)
	if err != nil {
		b.Fatal(err)
	}
	w, err := workload.ReadSpecs(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	c, err := workload.ReadCluster(strings.NewReader(fmt.Sprintf("nodes:\n  - count: %d\n    resources: {%s}\n", simRealNodes, strings.ReplaceAll(strings.TrimSpace(simRealNode), "\n", ", "))))
	if err != nil {
		b.Fatal(err)
	}
	var simWait, simSpan float64
	for seed := int64(1); seed <= simRealSeeds; seed++ {
		rep, err := sim.Run(sim.Config{Cluster: c, Workload: w, Scheduler: "auction", Seed: seed})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Unfinished > 0 {
			b.Fatalf("simulator seed %d left %d of %d jobs unfinished", seed, rep.Unfinished, len(list))
		}
		b.Logf("simulator seed %d: mean wait %.2f s, p99 %.2f s, makespan %.1f s", seed, rep.MeanWait, rep.P99Wait, rep.Makespan)
		simWait += rep.MeanWait / simRealSeeds
		simSpan += rep.Makespan / simRealSeeds
	}
	b.Logf("real: mean wait %.2f s, p99 %.2f s, makespan %.1f s; %d jobs, %d tasks", real.MeanWait, real.P99Wait, real.Makespan, len(list), real.Tasks)
	waitRatio, spanRatio := real.MeanWait/simWait, real.Makespan/simSpan
	b.ReportMetric(real.MeanWait, "real_mean_wait_s")
	b.ReportMetric(simWait, "sim_mean_wait_s")
	b.ReportMetric(waitRatio, "wait_real_vs_sim")
	b.ReportMetric(real.Makespan, "real_makespan_s")
	b.ReportMetric(simSpan, "sim_makespan_s")
	b.ReportMetric(spanRatio, "makespan_real_vs_sim")
	for _, r := range []struct {
		what string
		v    float64
	}{{"mean wait", waitRatio}, {"makespan", spanRatio}} {
		if r.v > 1.3 || r.v < 1/1.3 {
			b.Errorf("%s: real %.3f× the simulator's (target within 1.3× either way)", r.what, r.v)
		}
	}
}

// simRealRecords turns the real run's job records into the simulator's
// metrics, times from the first submit, and returns each job's submit
// offset as its manager recorded it.
func simRealRecords(b *testing.B, list []simRealJob, final []jobStatus) (metrics.Report, []time.Duration) {
	parse := func(what, s string) time.Time {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		return at
	}
	var t0 time.Time
	for i, st := range final {
		if at := parse("submitted", st.Submitted); i == 0 || at.Before(t0) {
			t0 = at
		}
	}
	in := metrics.Input{Scheduler: "real"}
	submits := make([]time.Duration, len(final))
	for i, st := range final {
		submits[i] = parse("submitted", st.Submitted).Sub(t0)
		rec := metrics.JobRecord{ID: st.ID, Class: list[i].Spec["type"].(string)}
		for _, ts := range st.Tasks {
			rec.Tasks = append(rec.Tasks, metrics.TaskRecord{
				Name: ts.Name, Replica: ts.Replica,
				Submit: submits[i],
				Start:  parse("started", ts.Started).Sub(t0), Started: true,
				Finish: parse("finished", ts.Finished).Sub(t0), Finished: true,
			})
		}
		in.Jobs = append(in.Jobs, rec)
	}
	return metrics.Compute(in), submits
}
