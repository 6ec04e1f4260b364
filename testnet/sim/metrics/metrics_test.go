package metrics

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

const s = time.Second

func node(cpuCores int64, gpus int) resource.Vector {
	v := resource.Vector{CPU: cpuCores * 1000, Memory: 16 << 30}
	for i := range gpus {
		v.GPUs = append(v.GPUs, resource.GPU{Index: i, Model: "T4", Memory: 16 << 30, Free: resource.WholeGPU})
	}
	return v
}

// task is a finished task record.
func task(name string, cpu int64, gpus int, submit, start, finish time.Duration, after ...string) TaskRecord {
	return TaskRecord{
		Name: name, After: after,
		Request: resource.Request{CPU: cpu, GPU: resource.GPURequest{Count: gpus}},
		Submit:  submit, Start: start, Finish: finish, Started: true, Finished: true,
	}
}

// example is a small simulation computed by hand in the comments.
func example() Input {
	return Input{
		Scheduler: "fcfs",
		Nodes:     []resource.Vector{node(4, 2), node(4, 0)}, // 8 cores, 2 GPUs
		Jobs: []JobRecord{
			// wait 0, response 100, runtime 100, slowdown 1
			{ID: "j1", User: "a", Tasks: []TaskRecord{task("main", 2000, 0, 0, 0, 100*s)}},
			// wait 10, response 50, runtime 40, slowdown 1.25
			{ID: "j2", User: "b", Tasks: []TaskRecord{task("main", 4000, 1, 10*s, 20*s, 60*s)}},
			// a DAG: wait 30, response 55, critical path 5+5 = 10 = τ, slowdown 5.5
			{ID: "j3", User: "a", Tasks: []TaskRecord{
				task("a", 1000, 0, 0, 30*s, 35*s),
				task("b", 1000, 0, 35*s, 50*s, 55*s, "a"),
			}},
			// never started: counted as a job and a task, in nothing else
			{ID: "j4", User: "b", Tasks: []TaskRecord{{Name: "main", Submit: 90 * s, Request: resource.Request{CPU: 1000}}}},
		},
		Predictions: []Prediction{
			{Job: "j1", Task: "main", Predicted: 110 * s, Estimate: 200 * s, Actual: 100 * s},
			{Job: "j2", Task: "main", Predicted: 30 * s, Actual: 40 * s},
		},
		Messages: 12, Bytes: 3400, Wall: 1500 * time.Millisecond,
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCompute(t *testing.T) {
	got := Compute(example())
	want := Report{
		Scheduler: "fcfs", Nodes: 2, Jobs: 4, Tasks: 5, Unfinished: 1, Measured: 3,
		Makespan:            100,
		MaxWait:             30,
		MeanWait:            40.0 / 3,
		MeanResponse:        205.0 / 3,
		MeanBoundedSlowdown: 7.75 / 3,
		P99Wait:             30,
		// CPU-ms: 2000·100 + 4000·40 + 1000·5 + 1000·5 = 370000 of 8000·100
		Utilization: 0.4625, BottleneckBusy: 0.4625,
		// the one GPU request (half the GPUs) arrives at 10 s, starts at 20 s
		GPUAllocationRatio: 0,
		// users' mean slowdowns a: (1+5.5)/2 = 3.25, b: 1.25
		JainFairness: 4.5 * 4.5 / (2 * (3.25*3.25 + 1.25*1.25)),
		// work a: 2·100 + 1·5 + 1·5 = 210 CPU-s, b: 4·40 = 160: b is the
		// light user (at most the median), its finished job waited 10 s
		LightUsersWait: 10, LightUsers: 1,
		Messages:         12,
		Bytes:            3400,
		PredictionMAPE:   (0.1 + 0.25) / 2,
		UserEstimateMAPE: 1,
		Wall:             1.5,
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		name := gv.Type().Field(i).Name
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if gf, ok := g.(float64); ok {
			if !near(gf, w.(float64)) {
				t.Errorf("%s = %v, want %v", name, gf, w)
			}
		} else if name != "ByWidth" && name != "ByClass" && !reflect.DeepEqual(g, w) {
			t.Errorf("%s = %v, want %v", name, g, w)
		}
	}
	if _, gpu := Utilization(example()); !near(gpu, 0.2) { // 1000·40 of 2000·100
		t.Errorf("GPU utilization = %v, want 0.2", gpu)
	}
}

func TestReportJSON(t *testing.T) {
	b, err := json.Marshal(Compute(Input{}))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"bottleneck_busy", "bytes", "gpu_allocation_ratio", "jain_fairness", "jobs", "light_users", "light_users_wait", "makespan_s", "max_wait_s", "mean_bounded_slowdown",
		"mean_response_s", "mean_wait_s", "measured", "messages", "nodes", "p99_wait_s", "prediction_mape", "scheduler", "skipped", "tasks", "unfinished",
		"user_estimate_mape", "utilization", "wall_s"}
	if !slices.Equal(keys, want) {
		t.Errorf("JSON keys %v, want %v", keys, want)
	}
}

func TestJobTimes(t *testing.T) {
	cases := []struct {
		name     string
		tasks    []TaskRecord
		runtime  time.Duration
		slowdown float64
	}{
		{"one task", []TaskRecord{task("m", 1, 0, 0, 50*s, 150*s)}, 100 * s, 1.5},
		{"short task bounded by tau", []TaskRecord{task("m", 1, 0, 0, 18*s, 20*s)}, 2 * s, 2},
		{"no wait", []TaskRecord{task("m", 1, 0, 0, 0, 2*s)}, 2 * s, 1},
		{"chain and a parallel branch", []TaskRecord{
			task("a", 1, 0, 0, 0, 10*s),
			task("b", 1, 0, 10*s, 10*s, 30*s, "a"),
			{Name: "b", Replica: 1, After: []string{"a"}, Submit: 10 * s, Start: 12 * s, Finish: 34 * s, Started: true, Finished: true},
			task("c", 1, 0, 0, 0, 25*s),
			task("d", 1, 0, 34*s, 40*s, 45*s, "b", "c"),
		}, 10*s + 22*s + 5*s, 45.0 / 37},
		{"cycle and unknown names ignored", []TaskRecord{
			task("a", 1, 0, 0, 0, 20*s, "b", "zz"),
			task("b", 1, 0, 0, 20*s, 40*s, "a"),
		}, 40 * s, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jt := Jobs(Input{Jobs: []JobRecord{{ID: "j", Tasks: c.tasks}}})[0]
			if !jt.Finished || jt.Runtime != c.runtime || !near(jt.BoundedSlowdown, c.slowdown) {
				t.Errorf("finished %v runtime %v slowdown %v, want true %v %v", jt.Finished, jt.Runtime, jt.BoundedSlowdown, c.runtime, c.slowdown)
			}
		})
	}
}

func TestGPUAllocation(t *testing.T) {
	gpuTask := func(job string, count int, share int64, submit, start time.Duration, started bool) JobRecord {
		return JobRecord{ID: job, Tasks: []TaskRecord{{
			Name: "main", Submit: submit, Start: start, Started: started,
			Request: resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: count, Share: share}},
		}}}
	}
	// One node of four GPUs; tasks arrive and never depart. C does not
	// fit and fails; at C the arrived requests (2 + 0.5 + 2) pass 4 GPUs,
	// and 2.5 of them are allocated.
	noDepartures := Input{
		Nodes: []resource.Vector{node(64, 4)},
		Jobs: []JobRecord{
			gpuTask("A", 2, 0, 0, 0, true),
			gpuTask("B", 0, 500, 1*s, 1*s, true),
			gpuTask("cpu-only", 0, 0, 1*s, 1*s, true),
			gpuTask("C", 2, 0, 2*s, 0, false),
			gpuTask("E", 1, 0, 2*s, 2*s, true), // arrives with C but after it
			gpuTask("D", 1, 0, 3*s, 3*s, true),
		},
	}
	withDeparture := noDepartures
	withDeparture.Jobs = slices.Clone(noDepartures.Jobs)
	a := withDeparture.Jobs[0]
	a.Tasks = []TaskRecord{a.Tasks[0]}
	a.Tasks[0].Finished, a.Tasks[0].Finish = true, 2*s
	withDeparture.Jobs[0] = a

	cases := []struct {
		name  string
		in    Input
		ratio float64
		curve []AllocationPoint
	}{
		{"no departures", noDepartures, 0.625, []AllocationPoint{
			{0.5, 0.5}, {0.625, 0.625}, {1.125, 0.625}, {1.375, 0.875}, {1.625, 1.125},
		}},
		{"A departs when C arrives", withDeparture, 0.125, []AllocationPoint{
			{0.5, 0.5}, {0.625, 0.625}, {1.125, 0.125}, {1.375, 0.375}, {1.625, 0.625},
		}},
		{"no GPUs", Input{Nodes: []resource.Vector{node(4, 0)}, Jobs: noDepartures.Jobs}, 0, nil},
		{"demand never reaches capacity", Input{Nodes: []resource.Vector{node(4, 8)}, Jobs: noDepartures.Jobs[:2]}, 2.5 / 8,
			[]AllocationPoint{{0.25, 0.25}, {2.5 / 8, 2.5 / 8}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := GPUAllocationRatio(c.in); !near(got, c.ratio) {
				t.Errorf("ratio = %v, want %v", got, c.ratio)
			}
			got := GPUAllocationCurve(c.in)
			if len(got) != len(c.curve) {
				t.Fatalf("curve %v, want %v", got, c.curve)
			}
			for i := range got {
				if !near(got[i].Arrived, c.curve[i].Arrived) || !near(got[i].Allocated, c.curve[i].Allocated) {
					t.Errorf("curve %v, want %v", got, c.curve)
					break
				}
			}
		})
	}
}

func TestUtilizationSeries(t *testing.T) {
	in := example()
	got := UtilizationSeries(in, 50*s)
	// bin 0: 2000·50 + 4000·30 + 1000·5 = 225000 of 400000; GPU 1000·30 of 100000
	// bin 1: 2000·50 + 4000·10 + 1000·5 = 145000; GPU 1000·10
	want := []UtilizationPoint{{0, 0.5625, 0.3}, {50, 0.3625, 0.1}}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for i := range want {
		if !near(got[i].At, want[i].At) || !near(got[i].CPU, want[i].CPU) || !near(got[i].GPU, want[i].GPU) {
			t.Errorf("series %v, want %v", got, want)
		}
	}
	// Any step: the time-weighted mean is Utilization.
	cpu, gpu := Utilization(in)
	for _, step := range []time.Duration{time.Second, 7 * s, 30 * s, 33 * s, 100 * s, 1000 * s} {
		series := UtilizationSeries(in, step)
		var c, g, total float64
		for i, p := range series {
			w := step.Seconds()
			if i == len(series)-1 {
				w = 100 - p.At
			}
			c, g, total = c+p.CPU*w, g+p.GPU*w, total+w
		}
		if !near(c/total, cpu) || !near(g/total, gpu) || total != 100 {
			t.Errorf("step %v: mean %v, %v over %vs, want %v, %v over 100s", step, c/total, g/total, total, cpu, gpu)
		}
	}
	if UtilizationSeries(Input{}, s) != nil || UtilizationSeries(in, 0) != nil {
		t.Error("want nil series for an empty input or a zero step")
	}
}

func TestUnfinishedRunToEnd(t *testing.T) {
	in := Input{
		Nodes: []resource.Vector{node(2, 0)},
		Jobs: []JobRecord{
			{ID: "done", Tasks: []TaskRecord{task("m", 1000, 0, 0, 0, 10*s)}},
			{ID: "running", Tasks: []TaskRecord{{Name: "m", Request: resource.Request{CPU: 2000}, Submit: 0, Start: 10 * s, Started: true}}},
		},
		End: 20 * s,
	}
	r := Compute(in)
	// 1000·10 + 2000·10 = 30000 of 2000·20
	if r.Makespan != 20 || !near(r.Utilization, 0.75) || r.MeanWait != 0 || r.MeanResponse != 10 {
		t.Errorf("makespan %v utilization %v wait %v response %v, want 20 0.75 0 10", r.Makespan, r.Utilization, r.MeanWait, r.MeanResponse)
	}
}

func TestStats(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i)
	}
	cases := []struct {
		name      string
		got, want float64
	}{
		{"p99 of 1..100", Percentile(hundred, 99), 99},
		{"p50 of 1..100", Percentile(hundred, 50), 50},
		{"p100 of 1..100", Percentile(hundred, 100), 100},
		{"p99 of one", Percentile([]float64{5}, 99), 5},
		{"p99 of none", Percentile(nil, 99), 0},
		{"jain equal", Jain([]float64{2, 2, 2}), 1},
		{"jain one of two", Jain([]float64{1, 0}), 0.5},
		{"jain 1,3", Jain([]float64{1, 3}), 16.0 / 20},
		{"jain none", Jain(nil), 0},
		{"mape", MAPE([]time.Duration{150, 0, 50}, []time.Duration{100, 100, 100}), 0.5},
		{"mape none", MAPE(nil, nil), 0},
	}
	for _, c := range cases {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	cdf := CDF([]float64{3, 1, 2, 2})
	if want := []CDFPoint{{1, 0.25}, {2, 0.75}, {3, 1}}; !reflect.DeepEqual(cdf, want) {
		t.Errorf("CDF = %v, want %v", cdf, want)
	}
	if got, want := ResponseCDF(example()), []CDFPoint{{50, 1.0 / 3}, {55, 2.0 / 3}, {100, 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ResponseCDF = %v, want %v", got, want)
	}
}

// TestBreakdowns: the width and class groups, the recorded schedule and
// the measurement window on the example run.
func TestBreakdowns(t *testing.T) {
	in := example()
	in.Jobs[0].Class, in.Jobs[1].Class, in.Jobs[2].Class, in.Jobs[3].Class = "x", "y", "x", "y"
	// j1 as a gang of two replicas
	in.Jobs[0].Tasks = append(in.Jobs[0].Tasks, in.Jobs[0].Tasks[0])
	in.Jobs[0].Tasks[1].Replica = 1
	in.Jobs[1].Recorded, in.Jobs[1].RecordedWait = true, 30*s // response 70, runtime 40: 1.75
	r := Compute(in)
	want := []Group{
		{Label: "1", Jobs: 2, Unfinished: 1, MeanWait: 20, P99Wait: 30, MaxWait: 30, MeanBoundedSlowdown: (1.25 + 5.5) / 2},
		{Label: "2-8", Jobs: 1, MeanWait: 0, P99Wait: 0, MaxWait: 0, MeanBoundedSlowdown: 1},
	}
	if !reflect.DeepEqual(r.ByWidth, want) {
		t.Errorf("by width %+v, want %+v", r.ByWidth, want)
	}
	if len(r.ByClass) != 2 || r.ByClass[0].Label != "x" || r.ByClass[0].Jobs != 2 || r.ByClass[1].Unfinished != 1 {
		t.Errorf("by class %+v", r.ByClass)
	}
	if r.Recorded == nil || r.Recorded.Jobs != 1 || r.Recorded.MeanWait != 30 || !near(r.Recorded.MeanBoundedSlowdown, 1.75) {
		t.Errorf("recorded %+v", r.Recorded)
	}
	if r.Measured != 3 || r.MaxWait != 30 {
		t.Errorf("measured %d, max wait %g; want 3, 30", r.Measured, r.MaxWait)
	}
	// Measure only what was submitted in [5s, 20s): j2. The CPU busy
	// over that window: j1 2 cores × 15 s (×2 replicas), j2 4 cores from
	// 20 s — nothing; so 60 core-s of 8 × 15.
	in.Measure = Window{From: 5 * s, To: 20 * s}
	r = Compute(in)
	if r.Measured != 1 || r.MeanWait != 10 || r.Unfinished != 1 {
		t.Errorf("windowed: measured %d, mean wait %g, unfinished %d; want 1, 10, 1", r.Measured, r.MeanWait, r.Unfinished)
	}
	if !near(r.BottleneckBusy, 60.0/120) {
		t.Errorf("windowed busy %g, want 0.5", r.BottleneckBusy)
	}
}
