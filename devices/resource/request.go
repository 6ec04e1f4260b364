package resource

import (
	"fmt"
	"sort"
	"strings"
)

// Request is what a task asks of the node that runs it.
type Request struct {
	CPU     int64             `json:"cpu_milli"`
	Memory  int64             `json:"memory"`
	Disk    int64             `json:"disk,omitempty"`
	GPU     GPURequest        `json:"gpu"`
	Devices []DeviceRequest   `json:"devices,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Site    string            `json:"site,omitempty"`
	// Limits are the limits the task asks its node to enforce (CPU and
	// memory as requested above); a node that cannot refuses it, unless
	// told otherwise (Enforcement).
	Limits Limits `json:"limits,omitempty"`
}

// GPURequest asks for Count whole GPUs, or, when Share is set, for that
// share (thousandths, 1..999) of a single GPU. Memory is the least memory
// each GPU must have; Model, when set, must appear in the GPU's model name
// (case-insensitive).
type GPURequest struct {
	Count  int    `json:"count,omitempty"`
	Share  int64  `json:"share_milli,omitempty"`
	Memory int64  `json:"memory,omitempty"`
	Model  string `json:"model,omitempty"`
}

// DeviceRequest asks for Count units of a declared device kind (and model).
type DeviceRequest struct {
	Kind  string `json:"kind"`
	Model string `json:"model,omitempty"`
	Count int    `json:"count"`
}

// Wants reports whether the request needs any GPU at all.
func (g GPURequest) Wants() bool { return g.Count > 0 || g.Share > 0 }

// Allocation says which GPUs a placed request holds and how much of each,
// and which declared device entries it holds units of.
type Allocation struct {
	GPUs    []int         `json:"gpus,omitempty"`
	Shares  []int64       `json:"shares,omitempty"`
	Devices []DeviceAlloc `json:"devices,omitempty"`
}

// DeviceAlloc is the number of units an allocation holds of one declared
// device entry, named by its exact kind and model. Recording the entry
// lets Give return units to the model they were taken from when a request
// that names no model was spread over several models.
type DeviceAlloc struct {
	Kind  string `json:"kind"`
	Model string `json:"model,omitempty"`
	Count int    `json:"count"`
}

// Node describes a placement target for the pure fit check: its free
// resources and its site and labels.
type Node struct {
	Site   string
	Labels map[string]string
	Free   Vector
}

// Constraints checks the request's site and label constraints against a
// node and returns "" or a reason naming the unmet constraint.
func Constraints(site string, labels map[string]string, req Request) string {
	if req.Site != "" && req.Site != site {
		return fmt.Sprintf("site %q != required %q", site, req.Site)
	}
	keys := make([]string, 0, len(req.Labels))
	for k := range req.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != ContainerLabel && labels[k] != req.Labels[k] {
			return fmt.Sprintf("label %s=%q != required %q", k, labels[k], req.Labels[k])
		}
	}
	// Last: a node with the labels asked for but no engine is the
	// closest miss, and the reason a job waits names what it lacks.
	if v, ok := req.Labels[ContainerLabel]; ok && labels[ContainerLabel] != v {
		return NoContainerRuntime
	}
	if req.Labels[ContainerLabel] == "yes" && req.GPU.Wants() && labels[ContainerGPULabel] == "no" {
		return NoContainerGPU
	}
	return ""
}

// NoContainerGPU is the reason a node whose GPUs cannot be passed into a
// container (its start-up check failed) does not run an image task that
// asks for GPUs.
const NoContainerGPU = "no container runtime for GPUs: the task runs an image with GPUs, and this node's GPU device files failed its start-up check"

// ContainerGPULabel is "no" on a node whose engine works but whose GPUs
// cannot be passed into containers; absent otherwise.
const ContainerGPULabel = "agora.container.gpu"

// NoContainerRuntime is the reason a node without a working engine
// cannot run an image task.
const NoContainerRuntime = "no container runtime: the task runs an image, and only nodes with podman or docker (--container-runtime) run images"

// ContainerLabel is the node label an image task requires: nodes whose
// container engine works advertise it with the value "yes".
const ContainerLabel = "agora.container"

// Matches reports whether GPU g meets the request's model and memory
// (not its free share: Fit checks that).
func (req GPURequest) Matches(g GPU) bool {
	if req.Memory > 0 && g.Memory < req.Memory {
		return false
	}
	if req.Model != "" && !strings.Contains(strings.ToLower(g.Model), strings.ToLower(req.Model)) {
		return false
	}
	return true
}

// Fit checks whether free can hold req and, if so, picks the GPUs. It
// returns the allocation, or a reason naming the first unmet requirement
// (for example "gpu memory: want 200GiB per GPU, largest 40GiB"). Fit does
// not change free; Take does.
//
// GPU choice is best-fit: for a share, the matching GPU with the least
// free share that still holds it, so partly used cards fill up before
// whole ones are broken into; for whole GPUs, the lowest indices.
// Device units are taken from the declared entries in order, and the
// allocation records which entries hold them, so that Give can return them.
func Fit(free Vector, req Request) (Allocation, string) {
	if req.CPU > free.CPU {
		return Allocation{}, fmt.Sprintf("cpu: want %g cores, free %g", CoresFromMilli(req.CPU), CoresFromMilli(free.CPU))
	}
	if req.Memory > free.Memory {
		return Allocation{}, fmt.Sprintf("memory: want %s, free %s", FormatSize(req.Memory), FormatSize(free.Memory))
	}
	if req.Disk > free.Disk {
		return Allocation{}, fmt.Sprintf("disk: want %s, free %s", FormatSize(req.Disk), FormatSize(free.Disk))
	}
	devs, reason := pickDevices(free.Devices, req.Devices)
	if reason != "" {
		return Allocation{}, reason
	}
	if !req.GPU.Wants() {
		return Allocation{Devices: devs}, ""
	}
	if r := gpuReason(free, req.GPU); r != "" {
		return Allocation{}, r
	}
	if req.GPU.Share > 0 && req.GPU.Count <= 1 {
		best := -1
		for i, g := range free.GPUs {
			if !req.GPU.Matches(g) || g.Free < req.GPU.Share {
				continue
			}
			if best < 0 || g.Free < free.GPUs[best].Free {
				best = i
			}
		}
		if best < 0 {
			return Allocation{}, fmt.Sprintf("gpu share: want %d/1000 of one GPU, none has that much free", req.GPU.Share)
		}
		return Allocation{GPUs: []int{free.GPUs[best].Index}, Shares: []int64{req.GPU.Share}, Devices: devs}, ""
	}
	a := Allocation{Devices: devs}
	for _, g := range free.GPUs {
		if len(a.GPUs) == req.GPU.Count {
			break
		}
		if g.Free >= WholeGPU && req.GPU.Matches(g) {
			a.GPUs = append(a.GPUs, g.Index)
			a.Shares = append(a.Shares, WholeGPU)
		}
	}
	if len(a.GPUs) < req.GPU.Count {
		return Allocation{}, fmt.Sprintf("gpu count: want %d, free %d matching", req.GPU.Count, len(a.GPUs))
	}
	return a, ""
}

// pickDevices chooses, in entry order, the declared device entries that
// hold the requested units. Several requests for one kind must fit
// together: those naming a model are served first, since they have no
// choice, and those naming none take what is left. It returns the picks,
// or a reason naming the first request that does not fit.
func pickDevices(free []Device, reqs []DeviceRequest) ([]DeviceAlloc, string) {
	if len(reqs) == 0 {
		return nil, ""
	}
	left := make([]int, len(free))
	for i, d := range free {
		left[i] = max(d.Count, 0)
	}
	ordered := make([]DeviceRequest, 0, len(reqs))
	for _, r := range reqs {
		if r.Model != "" {
			ordered = append(ordered, r)
		}
	}
	for _, r := range reqs {
		if r.Model == "" {
			ordered = append(ordered, r)
		}
	}
	taken := make([]int, len(free))
	for _, r := range ordered {
		have := 0
		for i, d := range free {
			if deviceMatches(d, r) {
				have += left[i]
			}
		}
		if have < r.Count {
			return nil, fmt.Sprintf("device %s: want %d, free %d", strings.TrimSpace(r.Kind+" "+r.Model), r.Count, have)
		}
		need := r.Count
		for i, d := range free {
			if need <= 0 {
				break
			}
			if !deviceMatches(d, r) {
				continue
			}
			n := min(left[i], need)
			left[i] -= n
			taken[i] += n
			need -= n
		}
	}
	var picks []DeviceAlloc
	for i, n := range taken {
		if n > 0 {
			picks = append(picks, DeviceAlloc{Kind: free[i].Kind, Model: free[i].Model, Count: n})
		}
	}
	return picks, ""
}

func deviceMatches(d Device, r DeviceRequest) bool {
	return strings.EqualFold(d.Kind, r.Kind) && (r.Model == "" || strings.EqualFold(d.Model, r.Model))
}

// gpuReason names the GPU requirement no GPU of free can meet, whatever
// is allocated: the model or the memory.
func gpuReason(free Vector, req GPURequest) string {
	if len(free.GPUs) == 0 {
		return "gpu: none on this node"
	}
	var largest int64
	modelOK := false
	for _, g := range free.GPUs {
		if req.Model == "" || strings.Contains(strings.ToLower(g.Model), strings.ToLower(req.Model)) {
			modelOK = true
			if g.Memory > largest {
				largest = g.Memory
			}
		}
	}
	if !modelOK {
		return fmt.Sprintf("gpu model: want %q, have %s", req.Model, free.GPUs[0].Model)
	}
	if req.Memory > largest {
		return fmt.Sprintf("gpu memory: want %s per GPU, largest %s", FormatSize(req.Memory), FormatSize(largest))
	}
	return ""
}

// Take subtracts a fitted request from v. It panics if the allocation does
// not fit, since Fit must have been called first: that is a caller bug.
func (v *Vector) Take(req Request, a Allocation) {
	if req.CPU > v.CPU || req.Memory > v.Memory || req.Disk > v.Disk {
		panic(fmt.Sprintf("resource: Take of %+v exceeds free %s", req, v))
	}
	v.CPU -= req.CPU
	v.Memory -= req.Memory
	v.Disk -= req.Disk
	v.adjustGPUs(a, -1)
	if len(a.Devices) > 0 {
		v.adjustDeviceAllocs(a.Devices, -1)
	} else {
		v.adjustDevices(req.Devices, -1)
	}
}

// Give returns a request's resources to v: the inverse of Take.
func (v *Vector) Give(req Request, a Allocation) {
	v.CPU += req.CPU
	v.Memory += req.Memory
	v.Disk += req.Disk
	v.adjustGPUs(a, +1)
	if len(a.Devices) > 0 {
		v.adjustDeviceAllocs(a.Devices, +1)
	} else {
		v.adjustDevices(req.Devices, +1)
	}
}

// adjustDeviceAllocs applies recorded device picks: taking spreads over
// the entries of that exact kind and model in order, giving returns the
// units to the first such entry.
func (v *Vector) adjustDeviceAllocs(picks []DeviceAlloc, sign int) {
	for _, p := range picks {
		left := p.Count
		for j := range v.Devices {
			if left == 0 {
				break
			}
			d := &v.Devices[j]
			if !strings.EqualFold(d.Kind, p.Kind) || !strings.EqualFold(d.Model, p.Model) {
				continue
			}
			if sign < 0 {
				n := min(d.Count, left)
				d.Count -= n
				left -= n
			} else {
				d.Count += left
				left = 0
			}
		}
		if left != 0 {
			panic(fmt.Sprintf("resource: device allocation %+v does not match the vector's devices", p))
		}
	}
}

func (v *Vector) adjustGPUs(a Allocation, sign int64) {
	for i, idx := range a.GPUs {
		share := int64(WholeGPU)
		if i < len(a.Shares) {
			share = a.Shares[i]
		}
		found := false
		for j := range v.GPUs {
			if v.GPUs[j].Index == idx {
				v.GPUs[j].Free += sign * share
				if v.GPUs[j].Free < 0 || v.GPUs[j].Free > WholeGPU {
					panic(fmt.Sprintf("resource: gpu %d share out of range: %d", idx, v.GPUs[j].Free))
				}
				found = true
				break
			}
		}
		if !found {
			panic(fmt.Sprintf("resource: allocation names unknown gpu %d", idx))
		}
	}
}

func (v *Vector) adjustDevices(reqs []DeviceRequest, sign int) {
	for _, r := range reqs {
		left := r.Count
		for j := range v.Devices {
			if left == 0 {
				break
			}
			d := &v.Devices[j]
			if !deviceMatches(*d, r) {
				continue
			}
			if sign < 0 {
				n := min(d.Count, left)
				d.Count -= n
				left -= n
			} else {
				d.Count += left
				left = 0
			}
		}
	}
}
