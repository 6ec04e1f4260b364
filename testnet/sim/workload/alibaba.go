package workload

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

const mib = int64(1) << 20

// alibabaGPUMemory is the memory of each GPU model of the Alibaba GPU
// v2023 node list. G2 and G3 are not disclosed, so they have none.
var alibabaGPUMemory = map[string]int64{
	"P100":    16 << 30,
	"T4":      16 << 30,
	"V100M16": 16 << 30,
	"V100M32": 32 << 30,
	"A10":     24 << 30,
}

// OpenAlibabaPods reads the pod list at path, gzipped or not.
func OpenAlibabaPods(path string) (*Workload, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAlibabaPods(r, filepath.Base(path))
}

// ReadAlibabaPods reads a pod list of the Alibaba GPU cluster trace v2023
// (openb_pod_list_*.csv). Columns are found by the names in the header
// row: cpu_milli, memory_mib, num_gpu, gpu_milli, creation_time,
// deletion_time and scheduled_time are required; name, qos and gpu_spec
// are used when present.
//
// Each pod becomes a job of one task, "main", of one replica, asking for
// cpu_milli millicores and memory_mib MiB; a pod with num_gpu 1 and
// gpu_milli below 1000 asks for that share of one GPU, any other with
// num_gpu > 0 for num_gpu whole GPUs; a gpu_spec naming one model (no
// '|') becomes the GPU model constraint. Submit is creation_time, the true
// runtime deletion_time − scheduled_time; pods without both, or with a
// runtime of zero or less, are skipped and counted. The pod's qos class
// (LS, BE, Burstable, Guaranteed) becomes both the job's Type,
// "alibaba-<qos>", and its User, since the trace has no users. The trace
// has no runtime estimates.
func ReadAlibabaPods(podsCSV io.Reader) (*Workload, error) {
	return readAlibabaPods(podsCSV, "alibaba-pods")
}

func readAlibabaPods(in io.Reader, name string) (*Workload, error) {
	t, err := newTable(name, in)
	if err != nil {
		return nil, err
	}
	var c struct{ cpu, mem, ngpu, gmilli, created, deleted, scheduled int }
	for _, f := range []struct {
		dst  *int
		name string
	}{
		{&c.cpu, "cpu_milli"}, {&c.mem, "memory_mib"}, {&c.ngpu, "num_gpu"}, {&c.gmilli, "gpu_milli"},
		{&c.created, "creation_time"}, {&c.deleted, "deletion_time"}, {&c.scheduled, "scheduled_time"},
	} {
		if *f.dst, err = t.column(f.name); err != nil {
			return nil, err
		}
	}
	podName, qosCol, specCol := t.optional("name"), t.optional("qos"), t.optional("gpu_spec")
	w := &Workload{Name: name}
	for row := 1; ; row++ {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		req, err := podRequest(t, c.cpu, c.mem, c.ngpu, c.gmilli, specCol)
		if err != nil {
			return nil, err
		}
		created, err := t.need(c.created, "creation_time")
		if err != nil {
			return nil, err
		}
		deleted, hasDel, err := t.int(c.deleted, "deletion_time")
		if err != nil {
			return nil, err
		}
		sched, hasSched, err := t.int(c.scheduled, "scheduled_time")
		if err != nil {
			return nil, err
		}
		switch {
		case !hasSched:
			w.skip("never scheduled")
			continue
		case !hasDel:
			w.skip("no deletion time")
			continue
		case deleted <= sched:
			w.skip("runtime <= 0")
			continue
		}
		runtime := time.Duration(deleted-sched) * time.Second
		id := t.text(podName)
		if id == "" {
			id = fmt.Sprintf("pod-%d", row)
		}
		qos := t.text(qosCol)
		typ := "alibaba"
		if qos != "" {
			typ += "-" + qos
		}
		w.Jobs = append(w.Jobs, Job{
			ID:     id,
			User:   qos,
			Submit: time.Duration(created) * time.Second,
			Spec: spec.Job{
				Name:     id,
				Type:     typ,
				Priority: spec.DefaultPriority,
				Tasks: []spec.Task{{
					Name:     "main",
					Command:  sleepCommand(runtime),
					Request:  req,
					Replicas: 1,
				}},
			},
			Runtimes: map[string]time.Duration{"main": runtime},
		})
	}
	w.Sort()
	if err := w.check(false); err != nil {
		return nil, err
	}
	return w, nil
}

// podRequest reads a pod's resource request from the current row.
func podRequest(t *table, cpuCol, memCol, ngpuCol, gmilliCol, specCol int) (resource.Request, error) {
	cpu, err := t.need(cpuCol, "cpu_milli")
	if err != nil {
		return resource.Request{}, err
	}
	mem, err := t.need(memCol, "memory_mib")
	if err != nil {
		return resource.Request{}, err
	}
	ngpu, err := t.need(ngpuCol, "num_gpu")
	if err != nil {
		return resource.Request{}, err
	}
	gmilli, _, err := t.int(gmilliCol, "gpu_milli")
	if err != nil {
		return resource.Request{}, err
	}
	req := resource.Request{CPU: cpu, Memory: mem * mib}
	switch {
	case ngpu > spec.MaxGPUCount:
		return req, t.fail("num_gpu", "%d GPUs, over the limit of %d", ngpu, spec.MaxGPUCount)
	case ngpu == 1 && gmilli > 0 && gmilli < resource.WholeGPU:
		req.GPU.Share = gmilli
	case ngpu > 0:
		req.GPU.Count = int(ngpu)
	}
	if m := t.text(specCol); req.GPU.Wants() && m != "" && !strings.Contains(m, "|") {
		req.GPU.Model = m
	}
	return req, nil
}

// OpenAlibabaNodes reads the node list at path, gzipped or not.
func OpenAlibabaNodes(path string) ([]NodeClass, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAlibabaNodes(r, filepath.Base(path))
}

// ReadAlibabaNodes reads a node list of the Alibaba GPU cluster trace
// v2023 (openb_node_list_*.csv) into node classes: nodes with identical
// resources form one class, in the order each first appears. Columns are
// found by name: cpu_milli, memory_mib, the GPU count (num_gpu or gpu)
// and the GPU model (model or gpu_model; empty for a CPU-only node).
// Each GPU gets its model's memory — P100, T4 and V100M16 16 GiB,
// V100M32 32 GiB, A10 24 GiB — or none for a model whose memory is not
// known (G2, G3). Classes have no site, latency or failure rate.
func ReadAlibabaNodes(nodesCSV io.Reader) ([]NodeClass, error) {
	return readAlibabaNodes(nodesCSV, "alibaba-nodes")
}

func readAlibabaNodes(in io.Reader, name string) ([]NodeClass, error) {
	t, err := newTable(name, in)
	if err != nil {
		return nil, err
	}
	cpuCol, err := t.column("cpu_milli")
	if err != nil {
		return nil, err
	}
	memCol, err := t.column("memory_mib")
	if err != nil {
		return nil, err
	}
	gpuCol, err := t.column("num_gpu", "gpu")
	if err != nil {
		return nil, err
	}
	modelCol := t.optional("model", "gpu_model")
	type key struct {
		cpu, mem, gpus int64
		model          string
	}
	index := map[key]int{}
	var classes []NodeClass
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		var k key
		if k.cpu, err = t.need(cpuCol, "cpu_milli"); err != nil {
			return nil, err
		}
		if k.mem, err = t.need(memCol, "memory_mib"); err != nil {
			return nil, err
		}
		if k.gpus, err = t.need(gpuCol, "gpu"); err != nil {
			return nil, err
		}
		if k.gpus > maxNodeGPUs {
			return nil, t.fail("gpu", "%d GPUs, over the limit of %d", k.gpus, maxNodeGPUs)
		}
		if k.gpus > 0 {
			k.model = t.text(modelCol)
		}
		if i, seen := index[k]; seen {
			classes[i].Count++
			continue
		}
		v := resource.Vector{CPU: k.cpu, Memory: k.mem * mib}
		for g := range int(k.gpus) {
			v.GPUs = append(v.GPUs, resource.GPU{
				Index: g, Model: k.model, Memory: alibabaGPUMemory[k.model], Free: resource.WholeGPU,
			})
		}
		index[k] = len(classes)
		classes = append(classes, NodeClass{Count: 1, Resources: v})
	}
	return classes, nil
}
