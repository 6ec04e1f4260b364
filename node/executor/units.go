package executor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agora-sched/agora/devices/resource"
)

// Declared devices (FPGA, NPU, ...) are counted by the market: an
// allocation says how many units of which entry a task holds, not which.
// The executor picks the units on its node, lowest free first, and tells
// the task which through its environment and, for an image task, the
// device paths passed in (docs/containers.md "Devices").

// DeviceUnits are the units of one declared device entry: their device
// paths, one per unit, or none when the entry declares no paths.
type DeviceUnits struct {
	Kind, Model string
	Count       int
	Paths       []string
}

// unitKey names a declared entry.
func unitKey(kind, model string) string { return kind + "\x00" + model }

// unitTable is which run holds each unit of each entry ("" free).
type unitTable map[string][]string

func newUnitTable(decl []DeviceUnits) unitTable {
	t := unitTable{}
	for _, d := range decl {
		t[unitKey(d.Kind, d.Model)] = make([]string, d.Count)
	}
	return t
}

// take gives run the lowest free units its allocation counts, and
// returns them by entry; an entry the table lacks, or too few free
// units, is an error (the market and the executor disagree).
func (t unitTable) take(run string, alloc []resource.DeviceAlloc) (map[string][]int, error) {
	got := map[string][]int{}
	for _, a := range alloc {
		k := unitKey(a.Kind, a.Model)
		units, ok := t[k]
		if !ok {
			t.give(run)
			return nil, fmt.Errorf("device %s %s: not declared on this node", a.Kind, a.Model)
		}
		for i := range units {
			if len(got[k]) == a.Count {
				break
			}
			if units[i] == "" {
				units[i] = run
				got[k] = append(got[k], i)
			}
		}
		if len(got[k]) < a.Count {
			t.give(run)
			return nil, fmt.Errorf("device %s %s: %d units wanted, %d free", a.Kind, a.Model, a.Count, len(got[k]))
		}
	}
	return got, nil
}

// claim marks units as run's (an attempt re-attached after a restart).
func (t unitTable) claim(run string, units map[string][]int) {
	for k, idx := range units {
		for _, i := range idx {
			if i >= 0 && i < len(t[k]) {
				t[k][i] = run
			}
		}
	}
}

// give frees run's units.
func (t unitTable) give(run string) {
	for _, units := range t {
		for i, h := range units {
			if h == run {
				units[i] = ""
			}
		}
	}
}

// deviceEnv is what a task holding units is told: AGORA_DEVICES lists
// its device paths (or kind:model:index where the entry declares none),
// and AGORA_<KIND>_DEVICES the unit indices of each kind, comma-separated
// (a kind's units numbered 0, 1, ... across its entries in file order).
// paths are the device paths to pass into a container.
func deviceEnv(decl []DeviceUnits, units map[string][]int) (env map[string]string, paths []string) {
	if len(units) == 0 {
		return nil, nil
	}
	env = map[string]string{}
	var all []string
	byKind := map[string][]string{}
	offset := map[string]int{} // a kind's units are numbered across its entries, in declared order
	for _, d := range decl {
		idx := units[unitKey(d.Kind, d.Model)]
		for _, i := range idx {
			if i < len(d.Paths) {
				all = append(all, d.Paths[i])
				paths = append(paths, d.Paths[i])
			} else {
				all = append(all, d.Kind+":"+d.Model+":"+strconv.Itoa(i))
			}
			byKind[d.Kind] = append(byKind[d.Kind], strconv.Itoa(offset[d.Kind]+i))
		}
		offset[d.Kind] += d.Count
	}
	env["AGORA_DEVICES"] = strings.Join(all, ",")
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		env["AGORA_"+envKind(kind)+"_DEVICES"] = strings.Join(byKind[kind], ",")
	}
	return env, paths
}

// envKind is a device kind as part of a variable name: upper case,
// anything but letters and digits as '_'.
func envKind(kind string) string {
	b := []byte(strings.ToUpper(kind))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
