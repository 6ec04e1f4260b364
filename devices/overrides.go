package devices

import (
	"os"

	"github.com/agora-sched/agora/devices/resource"
)

// Overrides is what an operator's resources file declares about the node,
// replacing or adding to what Discover found. An absent key leaves the
// discovered value alone: nil pointers and unset flags mean "not
// declared", so that a declared zero ("disk: 0", "gpus: []") is told apart
// from silence.
type Overrides struct {
	// File is the name the overrides were read from, for messages.
	File string
	// CPU is the declared CPU in millicores, or nil.
	CPU *int64
	// Memory is the declared memory in bytes, or nil.
	Memory *int64
	// Disk is the declared disk in bytes, or nil.
	Disk *int64
	// GPUs is the declared GPU list; it replaces the discovered GPUs
	// entirely when GPUsSet, even when it is empty.
	GPUs []resource.GPU
	// GPUsSet reports whether the file has a gpus key.
	GPUsSet bool
	// Devices is the declared device list; it replaces the discovered
	// devices entirely when DevicesSet, even when it is empty.
	Devices []resource.Device
	// DevicesSet reports whether the file has a devices key.
	DevicesSet bool
	// DevicePaths are the declared devices' unit paths, by entry (nil
	// for an entry without paths): what the executor gives the tasks
	// that hold the units (docs/containers.md "Devices").
	DevicePaths [][]string
}

// LoadFile reads and parses the resources file at path (see
// ParseOverrides). A file that cannot be read gives a *FileError such as
// "resources file /etc/agora/resources.yaml: open …: no such file or
// directory".
func LoadFile(path string) (Overrides, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Overrides{}, &FileError{File: path, Err: err}
	}
	return ParseOverrides(data, path)
}

// Declared lists the keys the file declared, in file-format order, for
// logging which discovered values were overridden.
func (o Overrides) Declared() []string {
	var keys []string
	if o.CPU != nil {
		keys = append(keys, "cpu")
	}
	if o.Memory != nil {
		keys = append(keys, "memory")
	}
	if o.Disk != nil {
		keys = append(keys, "disk")
	}
	if o.GPUsSet {
		keys = append(keys, "gpus")
	}
	if o.DevicesSet {
		keys = append(keys, "devices")
	}
	return keys
}

// Apply returns v with every declared value in place of the discovered
// one. A declared GPU list replaces v's GPUs entirely, numbered 0..n-1 and
// wholly free; a declared device list replaces v's devices. v itself is
// not changed.
func (o Overrides) Apply(v resource.Vector) resource.Vector {
	out := v.Clone()
	if o.CPU != nil {
		out.CPU = *o.CPU
	}
	if o.Memory != nil {
		out.Memory = *o.Memory
	}
	if o.Disk != nil {
		out.Disk = *o.Disk
	}
	if o.GPUsSet {
		out.GPUs = make([]resource.GPU, len(o.GPUs))
		for i, g := range o.GPUs {
			g.Index, g.Free = i, resource.WholeGPU
			out.GPUs[i] = g
		}
	}
	if o.DevicesSet {
		out.Devices = resource.Vector{Devices: o.Devices}.Clone().Devices
		if out.Devices == nil {
			out.Devices = []resource.Device{}
		}
	}
	return out
}
