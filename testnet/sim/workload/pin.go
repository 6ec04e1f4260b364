package workload

import (
	"fmt"
	"math/rand"
	"slices"

	"github.com/agora-sched/agora/market/spec"
)

// PinGPUModels gives a fraction frac of w's GPU tasks, drawn with seed, a
// GPU model constraint, as a trace's gpu_spec column would if it were
// filled (the Alibaba openb pod list leaves it empty for all 8,152 pods):
// a model of cluster c's, drawn in proportion to c's GPUs of that model
// among the models whose nodes could hold the task (enough GPUs of the
// model, CPU and memory on one node; for a gang that may not pack, as
// many such nodes as it has replicas). A task no model could hold is
// left unpinned. It returns the new workload and how many tasks it pinned.
func PinGPUModels(w *Workload, c *Cluster, frac float64, seed int64) (*Workload, int, error) {
	if frac < 0 || frac > 1 {
		return nil, 0, fmt.Errorf("workload: pin GPU models: fraction %g out of range [0, 1]", frac)
	}
	type class struct {
		gpus  map[string]int // per model, on one node
		cpu   int64
		mem   int64
		count int
	}
	var classes []class
	total := map[string]int{}
	for _, nc := range c.Nodes {
		k := class{gpus: map[string]int{}, cpu: nc.Resources.CPU, mem: nc.Resources.Memory, count: nc.Count}
		for _, g := range nc.Resources.GPUs {
			if g.Model != "" {
				k.gpus[g.Model]++
				total[g.Model] += nc.Count
			}
		}
		classes = append(classes, k)
	}
	models := make([]string, 0, len(total))
	for m := range total {
		models = append(models, m)
	}
	slices.Sort(models)
	if len(models) == 0 {
		return nil, 0, fmt.Errorf("workload: pin GPU models: the cluster's GPUs name no model")
	}
	// holds: enough nodes with GPUs of model m could each hold a replica
	// of t — one, or for a gang that may not pack, one per replica.
	holds := func(m string, t spec.Task) bool {
		r := t.Request
		need, nodes := max(r.GPU.Count, 1), 0
		for _, k := range classes {
			if k.gpus[m] >= need && k.cpu >= r.CPU && k.mem >= r.Memory {
				nodes += k.count
			}
		}
		if t.Gang && !t.Pack {
			return nodes >= max(t.Replicas, 1)
		}
		return nodes > 0
	}
	rng := rand.New(rand.NewSource(seed))
	out := *w
	out.Name = fmt.Sprintf("%s,gpu-models=%g", w.Name, frac)
	out.Jobs = slices.Clone(w.Jobs)
	pinned := 0
	for i := range out.Jobs {
		j := &out.Jobs[i]
		var tasks []int
		for ti, t := range j.Spec.Tasks {
			if (t.Request.GPU.Count > 0 || t.Request.GPU.Share > 0) && t.Request.GPU.Model == "" {
				tasks = append(tasks, ti)
			}
		}
		if len(tasks) == 0 {
			continue
		}
		j.Spec.Tasks = slices.Clone(j.Spec.Tasks)
		for _, ti := range tasks {
			if rng.Float64() >= frac {
				continue
			}
			tk := j.Spec.Tasks[ti]
			sum := 0
			for _, m := range models {
				if holds(m, tk) {
					sum += total[m]
				}
			}
			if sum == 0 {
				continue
			}
			x := rng.Intn(sum)
			for _, m := range models {
				if !holds(m, tk) {
					continue
				}
				if x -= total[m]; x < 0 {
					j.Spec.Tasks[ti].Request.GPU.Model = m
					pinned++
					break
				}
			}
		}
	}
	return &out, pinned, nil
}
