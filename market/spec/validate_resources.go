package spec

import (
	"maps"
	"slices"
	"strings"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/names"
)

// checkRequest checks a task's resource request; path is its resources.
func checkRequest(l *errorList, path string, r resource.Request) {
	switch {
	case r.CPU < 0:
		l.add(field(path, "cpu"), "negative cpu amount %dm", r.CPU)
	case r.CPU > MaxCPUMilli:
		l.add(field(path, "cpu"), "%dm is over the limit of %d cores", r.CPU, MaxCPUMilli/1000)
	}
	checkSize(l, field(path, "memory"), r.Memory)
	checkSize(l, field(path, "disk"), r.Disk)
	checkGPU(l, field(path, "gpu"), r.GPU)
	checkDevices(l, field(path, "devices"), r.Devices)
	checkLabels(l, field(path, "labels"), r.Labels)
	checkText(l, field(path, "site"), r.Site, MaxSiteLen, false)
	switch {
	case r.Limits&^resource.TaskLimits != 0:
		l.add(field(path, "limits"), "unknown limits %#x (a task may ask for cpu and memory)", uint8(r.Limits&^resource.TaskLimits))
	case r.Limits&resource.LimitCPU != 0 && r.CPU == 0:
		l.add(field(path, "limits"), "asks for a cpu limit without a cpu amount")
	case r.Limits&resource.LimitMemory != 0 && r.Memory == 0:
		l.add(field(path, "limits"), "asks for a memory limit without a memory amount")
	}
}

// checkSize checks a byte size: zero (no reservation) up to MaxBytes.
func checkSize(l *errorList, path string, b int64) {
	switch {
	case b < 0:
		l.add(path, "negative size %d", b)
	case b > MaxBytes:
		l.add(path, "%s is over the limit of %s", resource.FormatSize(b), resource.FormatSize(MaxBytes))
	}
}

// checkGPU checks a GPU request: whole GPUs or a share of one, never both.
func checkGPU(l *errorList, path string, g resource.GPURequest) {
	if g.Count < 0 || g.Count > MaxGPUCount {
		l.add(field(path, "count"), "%d out of range 0..%d", g.Count, MaxGPUCount)
	}
	if g.Share < 0 || g.Share > MaxGPUShareMilli {
		l.add(field(path, "share"), "%d thousandths out of range 1..%d", g.Share, MaxGPUShareMilli)
	}
	if g.Count > 0 && g.Share > 0 {
		l.add(path, "count and share are exclusive: ask for whole GPUs or for a share of one")
	}
	checkSize(l, field(path, "memory"), g.Memory)
	checkText(l, field(path, "model"), g.Model, MaxModelLen, false)
	if !g.Wants() && (g.Memory != 0 || g.Model != "") {
		l.add(path, "memory or model given without a count or share")
	}
}

// checkDevices checks the non-GPU device requests.
func checkDevices(l *errorList, path string, devs []resource.DeviceRequest) {
	if len(devs) > MaxDevices {
		l.add(path, "%d device requests, over the limit of %d", len(devs), MaxDevices)
		return
	}
	first := make(map[string]int, len(devs))
	for i, d := range devs {
		p := index(path, i)
		switch {
		case d.Kind == "":
			l.add(field(p, "kind"), "required")
		case !names.DeviceKind(d.Kind):
			l.add(field(p, "kind"), "invalid device kind %s: use 1 to %d letters, digits, '_', '.' or '-'", quote(d.Kind), MaxDeviceKindLen)
		}
		checkText(l, field(p, "model"), d.Model, MaxModelLen, false)
		if d.Count < 1 || d.Count > MaxDeviceCount {
			l.add(field(p, "count"), "%d out of range 1..%d", d.Count, MaxDeviceCount)
		}
		// Nodes match kinds and models case-insensitively.
		key := strings.ToLower(d.Kind) + "\x00" + strings.ToLower(d.Model)
		if f, dup := first[key]; dup {
			l.add(p, "duplicate device request (same kind and model as %s)", index(path, f))
			continue
		}
		first[key] = i
	}
}

// checkLabels checks the node-label constraints.
func checkLabels(l *errorList, path string, labels map[string]string) {
	if len(labels) > MaxLabels {
		l.add(path, "%d labels, over the limit of %d", len(labels), MaxLabels)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		p := keyPath(path, k)
		if !names.LabelKey(k) {
			l.add(p, "invalid label key %s: use 1 to %d letters, digits, '_', '.', '/' or '-'", quote(k), MaxLabelKeyLen)
			continue
		}
		checkText(l, p, labels[k], MaxLabelValueLen, false)
	}
}
