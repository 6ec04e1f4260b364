package spec

import (
	"math"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/resource"
)

var (
	resourceFields = []string{"cpu", "memory", "disk", "gpu", "devices", "labels", "site"}
	gpuFields      = []string{"count", "share", "memory", "model"}
	deviceFields   = []string{"kind", "model", "count"}
)

// resources decodes a task's resources into r, which holds the defaults.
func (d *decoder) resources(n *yaml.Node, path string, r *resource.Request) {
	d.mapping(n, path, resourceFields, func(key string, v *yaml.Node, p string) {
		switch key {
		case "cpu":
			if c, ok := d.cpu(v, p); ok {
				r.CPU = c
			}
			if r.CPU > 0 {
				r.Limits |= resource.LimitCPU
			}
		case "memory":
			r.Memory, _ = d.size(v, p)
			if r.Memory > 0 {
				r.Limits |= resource.LimitMemory
			}
		case "disk":
			r.Disk, _ = d.size(v, p)
		case "gpu":
			r.GPU = d.gpu(v, p)
		case "devices":
			r.Devices = d.devices(v, p)
		case "labels":
			r.Labels = d.labels(v, p)
		case "site":
			r.Site, _ = d.str(v, p)
		}
	})
}

// cpu decodes cores given as a number, or a string such as "2" or "500m",
// into millicores.
func (d *decoder) cpu(n *yaml.Node, path string) (int64, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
			d.errs.fail(path, n.Line, "negative cpu amount %s", quote(n.Value))
			return 0, false
		}
		m, err := resource.ParseCPU(n.Value)
		if err != nil {
			d.errs.fail(path, n.Line, "invalid cpu amount %s (want cores like 2 or 0.5, or millicores like 500m)", quote(n.Value))
			return 0, false
		}
		return m, true
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.errs.fail(path, n.Line, "must be a number of cores or a string such as \"500m\", got %s", describe(n))
		return 0, false
	}
	f, ok := d.number(n, path)
	switch {
	case !ok:
		return 0, false
	case f < 0:
		d.errs.fail(path, n.Line, "negative cpu amount %s", short(n.Value))
		return 0, false
	case f > MaxCPUMilli/1000:
		d.errs.fail(path, n.Line, "%s cores is over the limit of %d", short(n.Value), MaxCPUMilli/1000)
		return 0, false
	}
	return int64(math.Round(f * 1000)), true
}

// size decodes a byte size given as a number of bytes or a string such as
// "40GiB".
func (d *decoder) size(n *yaml.Node, path string) (int64, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.errs.fail(path, n.Line, "must be a size such as 512MiB or 40GiB, got %s", describe(n))
		return 0, false
	}
	if strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
		d.errs.fail(path, n.Line, "negative size %s", quote(n.Value))
		return 0, false
	}
	b, err := resource.ParseSize(n.Value)
	if err != nil {
		d.errs.fail(path, n.Line, "invalid size %s (want e.g. 512MiB, 40GiB or a byte count)", quote(n.Value))
		return 0, false
	}
	return b, true
}

// gpu decodes a GPU count (2), a share of one GPU (0.25), or the mapping
// {count | share, memory, model}.
func (d *decoder) gpu(n *yaml.Node, path string) resource.GPURequest {
	var g resource.GPURequest
	n = resolve(n)
	if n.Kind == yaml.MappingNode {
		d.mapping(n, path, gpuFields, func(key string, v *yaml.Node, p string) {
			switch key {
			case "count":
				g.Count, _ = d.integer(v, p)
			case "share":
				g.Share, _ = d.share(v, p)
			case "memory":
				g.Memory, _ = d.size(v, p)
			case "model":
				g.Model, _ = d.str(v, p)
			}
		})
		return g
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.errs.fail(path, n.Line, "must be a GPU count, a fraction of one GPU, or a mapping, got %s", describe(n))
		return g
	}
	f, ok := d.number(n, path)
	switch {
	case !ok:
	case f < 0:
		d.errs.fail(path, n.Line, "negative GPU count %s", short(n.Value))
	case f == math.Trunc(f):
		if f > MaxGPUCount {
			d.errs.fail(path, n.Line, "%s GPUs is over the limit of %d", short(n.Value), MaxGPUCount)
			break
		}
		g.Count = int(f)
	case f < 1:
		g.Share, _ = d.share(n, path)
	default:
		d.errs.fail(path, n.Line, "%s GPUs: use a whole number of GPUs, or a fraction between 0 and 1 for a share of one GPU", short(n.Value))
	}
	return g
}

// share decodes a fraction of one GPU, strictly between 0 and 1, into
// thousandths.
func (d *decoder) share(n *yaml.Node, path string) (int64, bool) {
	f, ok := d.number(n, path)
	if !ok {
		return 0, false
	}
	m := math.Round(f * resource.WholeGPU)
	if f <= 0 || f >= 1 || m < 1 || m > MaxGPUShareMilli {
		d.errs.fail(path, resolve(n).Line, "share %s out of range: want a fraction of one GPU from 0.001 to 0.999", short(resolve(n).Value))
		return 0, false
	}
	return int64(m), true
}

// devices decodes the list of non-GPU device requests.
func (d *decoder) devices(n *yaml.Node, path string) []resource.DeviceRequest {
	elems, ok := d.sequence(n, path, MaxDevices, "device requests")
	if !ok || len(elems) == 0 {
		return nil
	}
	devs := make([]resource.DeviceRequest, len(elems))
	for i, e := range elems {
		dev := &devs[i]
		dev.Count = 1
		d.mapping(e, index(path, i), deviceFields, func(key string, v *yaml.Node, p string) {
			switch key {
			case "kind":
				dev.Kind, _ = d.str(v, p)
			case "model":
				dev.Model, _ = d.str(v, p)
			case "count":
				dev.Count, _ = d.integer(v, p)
			}
		})
	}
	return devs
}

// labels decodes the node-label constraints.
func (d *decoder) labels(n *yaml.Node, path string) map[string]string {
	if c := count(n); c > MaxLabels {
		d.errs.fail(path, resolve(n).Line, "%d labels, over the limit of %d", c, MaxLabels)
		return nil
	}
	labels := make(map[string]string)
	d.mapping(n, path, nil, func(key string, v *yaml.Node, p string) {
		if s, ok := d.str(v, p); ok {
			labels[key] = s
		}
	})
	if len(labels) == 0 {
		return nil
	}
	return labels
}
