package resource

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// WholeGPU is the share of one GPU, in thousandths, that a GPU has when
// nothing is allocated on it.
const WholeGPU = 1000

// Vector is a node's resources: its capacity, or what of it is free.
// CPU is in millicores, Memory and Disk in bytes.
type Vector struct {
	CPU     int64    `json:"-"`
	Memory  int64    `json:"memory"`
	Disk    int64    `json:"disk"`
	GPUs    []GPU    `json:"gpus"`
	Devices []Device `json:"devices"`
}

// GPU is one accelerator card. In a capacity vector Free is WholeGPU; in a
// free vector it is the share (thousandths) not yet allocated.
type GPU struct {
	Index   int    `json:"index"`
	UUID    string `json:"uuid,omitempty"`
	Model   string `json:"model"`
	Memory  int64  `json:"memory"`
	Compute string `json:"compute_capability,omitempty"`
	Free    int64  `json:"free_milli"`
}

// Device is a declared accelerator other than an NVIDIA GPU (an FPGA, an
// NPU, …) with the number of units of that kind and model.
type Device struct {
	Kind       string            `json:"kind"`
	Model      string            `json:"model,omitempty"`
	Count      int               `json:"count"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

type vectorJSON struct {
	CPU     float64  `json:"cpu"`
	Memory  int64    `json:"memory"`
	Disk    int64    `json:"disk"`
	GPUs    []GPU    `json:"gpus"`
	Devices []Device `json:"devices"`
}

// MarshalJSON renders the vector in the API's devices shape: cpu in cores,
// sizes in bytes, and empty lists rather than null.
func (v Vector) MarshalJSON() ([]byte, error) {
	j := vectorJSON{CPU: CoresFromMilli(v.CPU), Memory: v.Memory, Disk: v.Disk, GPUs: v.GPUs, Devices: v.Devices}
	if j.GPUs == nil {
		j.GPUs = []GPU{}
	}
	if j.Devices == nil {
		j.Devices = []Device{}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the devices shape written by MarshalJSON.
func (v *Vector) UnmarshalJSON(b []byte) error {
	var j vectorJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*v = Vector{CPU: int64(math.Round(j.CPU * 1000)), Memory: j.Memory, Disk: j.Disk, GPUs: j.GPUs, Devices: j.Devices}
	return nil
}

// Clone returns a deep copy, so that a caller may change it freely.
func (v Vector) Clone() Vector {
	c := v
	c.GPUs = append([]GPU{}, v.GPUs...)
	c.Devices = make([]Device, len(v.Devices))
	for i, d := range v.Devices {
		c.Devices[i] = d
		if d.Attributes != nil {
			c.Devices[i].Attributes = make(map[string]string, len(d.Attributes))
			for k, a := range d.Attributes {
				c.Devices[i].Attributes[k] = a
			}
		}
	}
	if v.GPUs == nil {
		c.GPUs = nil
	}
	if v.Devices == nil {
		c.Devices = nil
	}
	return c
}

// FreeGPUs is the number of GPUs with nothing allocated on them.
func (v Vector) FreeGPUs() int {
	n := 0
	for _, g := range v.GPUs {
		if g.Free >= WholeGPU {
			n++
		}
	}
	return n
}

// GPUShare is the sum of free GPU shares in thousandths of a GPU.
func (v Vector) GPUShare() int64 {
	var s int64
	for _, g := range v.GPUs {
		s += g.Free
	}
	return s
}

// DeviceCount is the number of declared devices of the given kind, and of
// the given model when model is not empty (case-insensitive).
func (v Vector) DeviceCount(kind, model string) int {
	n := 0
	for _, d := range v.Devices {
		if strings.EqualFold(d.Kind, kind) && (model == "" || strings.EqualFold(d.Model, model)) {
			n += d.Count
		}
	}
	return n
}

// String is a short human summary such as "4cpu 16GiB 2×A100".
func (v Vector) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%gcpu %s", CoresFromMilli(v.CPU), FormatSize(v.Memory))
	models := map[string]int{}
	for _, g := range v.GPUs {
		models[g.Model]++
	}
	keys := make([]string, 0, len(models))
	for k := range models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %d×%s", models[k], k)
	}
	for _, d := range v.Devices {
		fmt.Fprintf(&b, " %d×%s", d.Count, d.Kind)
	}
	return b.String()
}
