package workload

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// TestPinGPUModels: the fraction asked for of the GPU tasks gets a model,
// drawn in proportion to the cluster's GPUs among the models that could
// hold the task; a task only one model holds gets that one; CPU tasks and
// the input workload are left as they were.
func TestPinGPUModels(t *testing.T) {
	node := func(model string, n int) resource.Vector {
		v := resource.Vector{CPU: 32000, Memory: 256 << 30}
		for i := range n {
			v.GPUs = append(v.GPUs, resource.GPU{Index: i, Model: model, Memory: 16 << 30, Free: resource.WholeGPU})
		}
		return v
	}
	c := &Cluster{Nodes: []NodeClass{{Count: 4, Resources: node("X", 8)}, {Count: 8, Resources: node("Y", 1)}, {Count: 3, Resources: node("", 0)}}}
	w := &Workload{Name: "w"}
	for i := range 3000 {
		r := resource.Request{CPU: 1000, Memory: 1 << 30}
		switch i % 3 {
		case 0:
			r.GPU.Count = 8 // only X's nodes
		case 1:
			r.GPU.Share = 500 // X 32 GPUs, Y 8: 0.8 X
		}
		w.Jobs = append(w.Jobs, Job{ID: fmt.Sprint(i), Spec: spec.Job{Name: "j", Tasks: []spec.Task{{Name: "t", Command: []string{"x"}, Request: r}}}})
	}
	for _, frac := range []float64{0, 0.4, 1} {
		p, n, err := PinGPUModels(w, c, frac, 7)
		if err != nil {
			t.Fatal(err)
		}
		byModel := map[string]int{}
		shares := 0
		for i, j := range p.Jobs {
			r := j.Spec.Tasks[0].Request
			if m := r.GPU.Model; m != "" {
				byModel[m]++
				if r.GPU.Count == 8 && m != "X" {
					t.Fatalf("an 8-GPU task pinned to %s, whose nodes hold 1", m)
				}
				if r.GPU.Share > 0 {
					shares++
				}
			}
			if r.GPU.Count == 0 && r.GPU.Share == 0 && r.GPU.Model != "" {
				t.Fatalf("a CPU task pinned to %s", r.GPU.Model)
			}
			if w.Jobs[i].Spec.Tasks[0].Request.GPU.Model != "" {
				t.Fatal("the input workload changed")
			}
		}
		if got := float64(n) / 2000; math.Abs(got-frac) > 0.04 {
			t.Fatalf("frac %g: %d of 2000 GPU tasks pinned (%.3f)", frac, n, got)
		}
		if frac == 1 {
			if x := float64(byModel["X"]-1000) / float64(shares); math.Abs(x-0.8) > 0.04 {
				t.Fatalf("shares pinned to X: %.3f, want 0.8 (%v)", x, byModel)
			}
		}
	}
	if _, _, err := PinGPUModels(w, c, 1.5, 1); err == nil {
		t.Fatal("a fraction of 1.5 was taken")
	}
}

// TestPinGPUModelsGangs: a gang that may not pack is pinned only to a
// model with as many nodes as it has replicas; one that packs, or a
// plain task, to any model a node of which holds a replica.
func TestPinGPUModelsGangs(t *testing.T) {
	node := func(model string) resource.Vector {
		return resource.Vector{CPU: 32000, Memory: 256 << 30, GPUs: []resource.GPU{{Index: 0, Model: model, Memory: 80 << 30, Free: resource.WholeGPU}}}
	}
	c := &Cluster{Nodes: []NodeClass{{Count: 3, Resources: node("A100")}, {Count: 8, Resources: node("L4")}}}
	task := func(gang, pack bool) spec.Task {
		return spec.Task{Name: "w", Replicas: 4, Gang: gang, Pack: pack, Request: resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}}
	}
	w := &Workload{Name: "gangs"}
	for i := range 600 {
		j := Job{ID: fmt.Sprintf("j%d", i), Runtimes: map[string]time.Duration{"w": time.Minute}}
		j.Spec.Name = j.ID
		j.Spec.Tasks = []spec.Task{task(i%3 == 0, i%3 == 1)}
		w.Jobs = append(w.Jobs, j)
	}
	out, n, err := PinGPUModels(w, c, 1, 1)
	if err != nil || n != 600 {
		t.Fatalf("pinned %d: %v", n, err)
	}
	a100 := [3]int{}
	for i, j := range out.Jobs {
		if j.Spec.Tasks[0].Request.GPU.Model == "A100" {
			a100[i%3]++
		}
	}
	if a100[0] != 0 {
		t.Errorf("%d gangs of 4 that may not pack pinned to the 3 A100 nodes", a100[0])
	}
	// 3 of 11 GPUs are A100s: about 55 of 200 each.
	for k, what := range []string{"", "packing gangs", "plain tasks"} {
		if k > 0 && (a100[k] < 30 || a100[k] > 80) {
			t.Errorf("%s: %d of 200 pinned to A100, want about 55", what, a100[k])
		}
	}
}
