package devices

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/devices/yamlnode"
)

// Limits on a resources file, matching what peers accept in an advert.
const (
	maxFileGPUs    = 64
	maxFileDevices = 64
	maxNameLen     = 128
	maxAttributes  = 32
	maxDeviceCount = 1 << 20
)

// ParseOverrides parses a resources file's contents; name is the file's
// name for messages. The file is YAML with the optional keys
//
//	cpu: 4              # cores (4, 0.5) or millicores ("500m")
//	memory: 16GiB       # a size, or an integer byte count
//	disk: 500GiB
//	gpus:               # replaces the discovered GPUs ([] for none)
//	  - {model: "NVIDIA A100-SXM4-40GB", memory: 40GiB, uuid: GPU-…, compute: "8.0"}
//	devices:            # other accelerators
//	  - {kind: fpga, model: u250, count: 2, attributes: {vendor: xilinx}}
//
// Parsing is strict: unknown or repeated keys, values of the wrong type,
// negative amounts, a GPU without model or memory and a device without kind
// or with a count below one are all rejected. Every error is a *FileError
// naming the file and the field, such as
// `resources file gpu.yaml: gpus[1].memory: invalid size "abc" (…)`.
// An empty file declares nothing.
func ParseOverrides(data []byte, name string) (Overrides, error) {
	o := Overrides{File: name}
	fail := func(field string, format string, args ...any) (Overrides, error) {
		return Overrides{}, &FileError{File: name, Field: field, Err: fmt.Errorf(format, args...)}
	}
	root, err := yamlnode.Decode(data)
	var extra *yamlnode.ExtraDocumentError
	switch {
	case errors.As(err, &extra):
		return fail("", "%v", err)
	case err != nil:
		return Overrides{}, &FileError{File: name, Err: err}
	case root == nil:
		return o, nil
	}
	if root.Kind != yaml.MappingNode {
		return fail("", "want a mapping of cpu, memory, disk, gpus and devices, got %s", kindOf(root))
	}
	err = eachKey(root, "", func(key string, field string, v *yaml.Node) error {
		switch key {
		case "cpu":
			m, err := cpuValue(v)
			o.CPU = &m
			return err
		case "memory":
			n, err := sizeValue(v)
			o.Memory = &n
			return err
		case "disk":
			n, err := sizeValue(v)
			o.Disk = &n
			return err
		case "gpus":
			o.GPUsSet = true
			return eachItem(v, field, maxFileGPUs, func(i int, field string, item *yaml.Node) error {
				g, err := gpuValue(item, field)
				g.Index = i
				o.GPUs = append(o.GPUs, g)
				return err
			})
		case "devices":
			o.DevicesSet = true
			return eachItem(v, field, maxFileDevices, func(_ int, field string, item *yaml.Node) error {
				d, paths, err := deviceValue(item, field)
				o.Devices = append(o.Devices, d)
				o.DevicePaths = append(o.DevicePaths, paths)
				return err
			})
		}
		return unknownKey("cpu, memory, disk, gpus or devices")
	})
	if err != nil {
		return Overrides{}, withFile(err, name)
	}
	if o.GPUsSet && o.GPUs == nil {
		o.GPUs = []resource.GPU{}
	}
	if o.DevicesSet && o.Devices == nil {
		o.Devices = []resource.Device{}
	}
	if !slices.ContainsFunc(o.DevicePaths, func(p []string) bool { return p != nil }) {
		o.DevicePaths = nil
	}
	if field, err := duplicateUUID(o.GPUs); err != nil {
		return fail(field, "%v", err)
	}
	if field, err := duplicateDevice(o.Devices, o.DevicePaths); err != nil {
		return fail(field, "%v", err)
	}
	return o, nil
}

// withFile names the file in a field error from the walk.
func withFile(err error, name string) error {
	var fe *FileError
	if errors.As(err, &fe) {
		fe.File = name
		return fe
	}
	return &FileError{File: name, Err: err}
}

// fieldErr marks err as being about field.
func fieldErr(field string, err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return fe
	}
	return &FileError{Field: field, Err: err}
}

type unknownKey string

func (u unknownKey) Error() string { return "unknown key (want " + string(u) + ")" }

// eachKey calls f for each key of mapping m, in file order, with the
// key's field path. It rejects keys that are not strings and repeated
// keys. An error f returns is reported against the key's field.
func eachKey(m *yaml.Node, prefix string, f func(key, field string, v *yaml.Node) error) error {
	for _, kv := range yamlnode.Fields(m) {
		if kv.Problem != "" {
			field := prefix + kv.Key
			if kv.K.Kind != yaml.ScalarNode || kv.K.ShortTag() == "!!null" {
				field = strings.TrimSuffix(prefix, ".")
			}
			return fieldErr(field, fmt.Errorf("line %d: %s", kv.K.Line, kv.Problem))
		}
		field := prefix + kv.Key
		if err := f(kv.Key, field, kv.V); err != nil {
			return fieldErr(field, err)
		}
	}
	return nil
}

// eachItem calls f for each element of sequence s, at most limit of them,
// with the element's field path, field[i].
func eachItem(s *yaml.Node, field string, limit int, f func(i int, field string, item *yaml.Node) error) error {
	if s.Kind != yaml.SequenceNode {
		return fmt.Errorf("want a list ([] for none), got %s", kindOf(s))
	}
	if len(s.Content) > limit {
		return fmt.Errorf("%d entries, at most %d allowed", len(s.Content), limit)
	}
	for i, item := range s.Content {
		ifield := fmt.Sprintf("%s[%d]", field, i)
		if err := f(i, ifield, deref(item)); err != nil {
			return fieldErr(ifield, err)
		}
	}
	return nil
}

// gpuValue reads one entry of gpus.
func gpuValue(n *yaml.Node, field string) (resource.GPU, error) {
	g := resource.GPU{Free: resource.WholeGPU}
	if n.Kind != yaml.MappingNode {
		return g, fmt.Errorf("want a mapping with model and memory, got %s", kindOf(n))
	}
	hasMemory := false
	err := eachKey(n, field+".", func(key, _ string, v *yaml.Node) error {
		var err error
		switch key {
		case "model":
			g.Model, err = nameValue(v)
		case "memory":
			hasMemory = true
			g.Memory, err = sizeValue(v)
		case "uuid":
			g.UUID, err = nameValue(v)
		case "compute":
			g.Compute, err = computeValue(v)
		default:
			err = unknownKey("model, memory, uuid or compute")
		}
		return err
	})
	switch {
	case err != nil:
		return g, err
	case g.Model == "":
		return g, fieldErr(field+".model", errors.New("missing (want the GPU model, such as \"NVIDIA A100-SXM4-40GB\")"))
	case !hasMemory:
		return g, fieldErr(field+".memory", errors.New("missing (want the GPU's memory, such as 40GiB)"))
	case g.Memory == 0:
		return g, fieldErr(field+".memory", errors.New("must be more than zero"))
	}
	return g, nil
}

// deviceValue reads one entry of devices.
func deviceValue(n *yaml.Node, field string) (resource.Device, []string, error) {
	var d resource.Device
	var paths []string
	if n.Kind != yaml.MappingNode {
		return d, nil, fmt.Errorf("want a mapping with kind and count, got %s", kindOf(n))
	}
	hasCount := false
	err := eachKey(n, field+".", func(key, kfield string, v *yaml.Node) error {
		var err error
		switch key {
		case "kind":
			d.Kind, err = nameValue(v)
		case "model":
			d.Model, err = nameValue(v)
		case "count":
			hasCount = true
			d.Count, err = countValue(v)
		case "attributes":
			d.Attributes, err = attributesValue(v, kfield)
		case "paths":
			paths, err = pathsValue(v)
		default:
			err = unknownKey("kind, model, count, attributes or paths")
		}
		return err
	})
	switch {
	case err != nil:
		return d, nil, err
	case d.Kind == "":
		return d, nil, fieldErr(field+".kind", errors.New("missing (want the device kind, such as fpga)"))
	case !hasCount:
		return d, nil, fieldErr(field+".count", errors.New("missing (want the number of units, at least 1)"))
	case paths != nil && len(paths) != d.Count:
		return d, nil, fieldErr(field+".paths", fmt.Errorf("%d paths for %d units: give one device path per unit", len(paths), d.Count))
	}
	return d, paths, nil
}

// pathsValue reads a device's unit paths: a list of distinct absolute
// paths under /dev.
func pathsValue(n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list of device paths, got %s", kindOf(n))
	}
	seen := map[string]bool{}
	paths := []string{}
	for _, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
			return nil, fmt.Errorf("want a device path such as /dev/xclmgmt0, got %s", kindOf(item))
		}
		p := item.Value
		if !strings.HasPrefix(p, "/dev/") || path.Clean(p) != p || len(p) > maxNameLen {
			return nil, fmt.Errorf("%q is not a clean path under /dev", p)
		}
		if seen[p] {
			return nil, fmt.Errorf("%s is given twice", p)
		}
		seen[p] = true
		paths = append(paths, p)
	}
	return paths, nil
}

// attributesValue reads a device's attributes: a mapping of names to
// scalar values, which are kept as their text.
func attributesValue(n *yaml.Node, field string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want a mapping of names to values, got %s", kindOf(n))
	}
	if len(n.Content)/2 > maxAttributes {
		return nil, fmt.Errorf("%d attributes, at most %d allowed", len(n.Content)/2, maxAttributes)
	}
	attrs := make(map[string]string, len(n.Content)/2)
	err := eachKey(n, field+".", func(key, _ string, v *yaml.Node) error {
		if key == "" {
			return errors.New("empty attribute name")
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
			return fmt.Errorf("want a value such as a string or number, got %s", kindOf(v))
		}
		if len(key) > maxNameLen || len(v.Value) > maxNameLen {
			return fmt.Errorf("longer than %d characters", maxNameLen)
		}
		attrs[key] = v.Value
		return nil
	})
	return attrs, err
}

// duplicateDevice finds a kind and model declared by two entries (the
// market counts units by kind and model, so the executor could not tell
// which entry's unit a task holds) or a device path two entries share.
func duplicateDevice(devs []resource.Device, paths [][]string) (string, error) {
	seen := map[[2]string]int{}
	owner := map[string]int{}
	for i, d := range devs {
		k := [2]string{d.Kind, d.Model}
		if j, dup := seen[k]; dup {
			return fmt.Sprintf("devices[%d]", i), fmt.Errorf("%s %q is also devices[%d]: give one entry with the total count", d.Kind, d.Model, j)
		}
		seen[k] = i
		if i >= len(paths) {
			continue
		}
		for _, p := range paths[i] {
			if j, dup := owner[p]; dup {
				return fmt.Sprintf("devices[%d].paths", i), fmt.Errorf("%s is also devices[%d]'s", p, j)
			}
			owner[p] = i
		}
	}
	return "", nil
}

// duplicateUUID finds a UUID given to two GPUs.
func duplicateUUID(gpus []resource.GPU) (string, error) {
	seen := map[string]int{}
	for i, g := range gpus {
		if g.UUID == "" {
			continue
		}
		if j, dup := seen[g.UUID]; dup {
			return fmt.Sprintf("gpus[%d].uuid", i), fmt.Errorf("%s is also gpus[%d]'s", g.UUID, j)
		}
		seen[g.UUID] = i
	}
	return "", nil
}
