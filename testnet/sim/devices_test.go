package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// TestHeteroDevicesCluster: three GPU models, FPGAs on a quarter of the
// CPU servers and NPUs on half the edge boxes, as documented.
func TestHeteroDevicesCluster(t *testing.T) {
	c := HeteroDevicesCluster(100)
	tot := c.Total()
	models := map[string]int{}
	for _, g := range tot.GPUs {
		models[g.Model]++
	}
	if len(models) != 3 || models["A100-SXM4-80GB"] != 24 || models["H100-SXM5-80GB"] != 24 || models["L4"] != 32 {
		t.Errorf("GPU models %v", models)
	}
	if f, n := tot.DeviceCount("fpga", ""), tot.DeviceCount("npu", ""); f != 24 || n != 20 {
		t.Errorf("%d FPGAs and %d NPUs, want 24 (12 of 50 CPU servers, two each) and 20", f, n)
	}
	if n := c.Size(); n != 100 {
		t.Errorf("%d nodes", n)
	}
}

// TestDevicesPlaced: the synthetic mix with device jobs and 40 % of the
// GPU tasks pinned to a model, on hetero-devices:100, under the auction
// and a central baseline: every device task runs on a node that declares
// its kind, every pinned task on a node with its model, and every job
// that some node can hold finishes.
func TestDevicesPlaced(t *testing.T) {
	c := HeteroDevicesCluster(100)
	src := workload.Source{Kind: workload.KindSynthetic, Seed: 2, Jobs: 300, Load: 0.8, Devices: 0.3}
	w0, err := src.Open(c.Total(), LargestNode(c))
	if err != nil {
		t.Fatal(err)
	}
	w, pinned, err := workload.PinGPUModels(w0, c, 0.4, 2)
	if err != nil || pinned == 0 {
		t.Fatalf("pinned %d: %v", pinned, err)
	}
	var caps []resource.Vector
	for _, nc := range c.Nodes {
		for range nc.Count {
			caps = append(caps, nc.Resources)
		}
	}
	req := map[market.TaskKey]resource.Request{}
	for _, j := range w.Jobs {
		for _, tk := range j.Spec.Tasks {
			for r := range max(tk.Replicas, 1) {
				req[market.TaskKey{Job: j.ID, Task: tk.Name, Replica: r}] = tk.Request
			}
		}
	}
	for _, sched := range []string{"auction", "easy"} {
		t.Run(sched, func(t *testing.T) {
			devices, models := 0, 0
			cfg := Config{Cluster: c, Workload: w, Scheduler: sched, Seed: 1, Horizon: 30 * 24 * time.Hour}
			cfg.onStart = func(node int, k market.TaskKey, _ time.Duration) {
				r, cp := req[k], caps[node]
				for _, d := range r.Devices {
					devices++
					if cp.DeviceCount(d.Kind, "") == 0 {
						t.Errorf("%v (%s) started on node %d, which has no %s", k, d.Kind, node, d.Kind)
					}
				}
				if m := r.GPU.Model; m != "" {
					models++
					if len(cp.GPUs) == 0 || !strings.Contains(strings.ToLower(cp.GPUs[0].Model), strings.ToLower(m)) {
						t.Errorf("%v pinned to %s started on node %d with %v", k, m, node, cp.GPUs)
					}
				}
			}
			in, err := Simulate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if devices < 20 || models < 10 {
				t.Fatalf("%d device tasks and %d pinned GPU tasks started; the workload should have more", devices, models)
			}
			allFinished(t, in)
		})
	}
}
