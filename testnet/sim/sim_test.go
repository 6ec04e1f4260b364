package sim

import (
	"reflect"
	"testing"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

func tinyCluster() *workload.Cluster {
	gpu := resource.Vector{CPU: 32000, Memory: 256 << 30, Disk: 1 << 40}
	for i := range 4 {
		gpu.GPUs = append(gpu.GPUs, resource.GPU{Index: i, Model: "A100-SXM4-40GB", Memory: 40 << 30, Free: resource.WholeGPU})
	}
	cpu := resource.Vector{CPU: 16000, Memory: 64 << 30, Disk: 1 << 40}
	return &workload.Cluster{Nodes: []workload.NodeClass{{Count: 3, Resources: gpu}, {Count: 2, Resources: cpu}}}
}

func tinyWorkload(t *testing.T, seed int64, jobs int) *workload.Workload {
	t.Helper()
	c := tinyCluster()
	src, err := workload.ParseSpec("synthetic:1")
	if err != nil {
		t.Fatal(err)
	}
	src.Seed, src.Jobs = seed, jobs
	w, err := src.Open(c.Total(), LargestNode(c))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func run(t *testing.T, sched string, seed int64, w *workload.Workload) metrics.Report {
	t.Helper()
	r, err := Run(Config{Cluster: tinyCluster(), Workload: w, Scheduler: sched, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSchedulersFinishAll(t *testing.T) {
	w := tinyWorkload(t, 1, 50)
	for _, s := range Schedulers {
		t.Run(s, func(t *testing.T) {
			in, err := Simulate(Config{Cluster: tinyCluster(), Workload: w, Scheduler: s, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			r := metrics.Compute(in)
			t.Logf("%s: %+v", s, r)
			if r.Jobs != 50 || r.MeanResponse <= 0 {
				t.Fatalf("report %+v", r)
			}
			for _, jt := range metrics.Jobs(in) {
				if !jt.Finished {
					t.Fatalf("%s: job %s did not finish", s, jt.ID)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	w := tinyWorkload(t, 2, 40)
	for _, s := range []string{"random", "easy", "auction"} {
		a, b := run(t, s, 7, w), run(t, s, 7, w)
		a.Wall, b.Wall = 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: same seed, different reports:\n%+v\n%+v", s, a, b)
		}
		c := run(t, s, 8, tinyWorkload(t, 8, 40)) // placement seed alone rarely moves a light load
		c.Wall = 0
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: different seeds gave identical reports %+v", s, a)
		}
	}
}

func TestAuctionNearOmniscient(t *testing.T) {
	w := tinyWorkload(t, 3, 40)
	a, o := run(t, "auction", 1, w), run(t, "sjf-oracle", 1, w)
	ratio := a.MeanResponse / o.MeanResponse
	t.Logf("auction mean response %.1fs, sjf-oracle %.1fs, ratio %.2f; messages %d bytes %d", a.MeanResponse, o.MeanResponse, ratio, a.Messages, a.Bytes)
	if a.Messages == 0 || a.Bytes == 0 {
		t.Errorf("auction sent nothing: %+v", a)
	}
	if ratio > 3 {
		t.Errorf("auction mean response %.2f× sjf-oracle's", ratio)
	}
}
