package executor

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agora-sched/agora/devices/resource"
)

// TestDeviceUnits: the executor hands out the lowest free units of each
// declared entry, numbers a kind's units across its entries, tells the
// task its paths and indices, and frees them when the run ends.
func TestDeviceUnits(t *testing.T) {
	decl := []DeviceUnits{
		{Kind: "fpga", Model: "u250", Count: 2, Paths: []string{"/dev/xcl0", "/dev/xcl1"}},
		{Kind: "fpga", Model: "u280", Count: 1, Paths: []string{"/dev/xcl2"}},
		{Kind: "npu", Model: "hailo8", Count: 2},
	}
	tab := newUnitTable(decl)
	a, err := tab.take("run-a", []resource.DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 1}, {Kind: "npu", Model: "hailo8", Count: 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tab.take("run-b", []resource.DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 1}, {Kind: "fpga", Model: "u280", Count: 1}})
	if err != nil {
		t.Fatal(err)
	}
	envA, pathsA := deviceEnv(decl, a)
	envB, pathsB := deviceEnv(decl, b)
	want := map[string]string{"AGORA_DEVICES": "/dev/xcl0,npu:hailo8:0", "AGORA_FPGA_DEVICES": "0", "AGORA_NPU_DEVICES": "0"}
	if !reflect.DeepEqual(envA, want) || !reflect.DeepEqual(pathsA, []string{"/dev/xcl0"}) {
		t.Fatalf("run a: %v %v, want %v", envA, pathsA, want)
	}
	want = map[string]string{"AGORA_DEVICES": "/dev/xcl1,/dev/xcl2", "AGORA_FPGA_DEVICES": "1,2"}
	if !reflect.DeepEqual(envB, want) || !reflect.DeepEqual(pathsB, []string{"/dev/xcl1", "/dev/xcl2"}) {
		t.Fatalf("run b: %v %v, want %v", envB, pathsB, want)
	}
	if _, err := tab.take("run-c", []resource.DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 1}}); err == nil || !strings.Contains(err.Error(), "1 units wanted, 0 free") {
		t.Fatalf("a third u250 from two: %v", err)
	}
	if _, err := tab.take("run-c", []resource.DeviceAlloc{{Kind: "gpu", Model: "x", Count: 1}}); err == nil || !strings.Contains(err.Error(), "not declared") {
		t.Fatalf("an undeclared entry: %v", err)
	}
	tab.give("run-a")
	c, err := tab.take("run-c", []resource.DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 1}})
	if err != nil || !reflect.DeepEqual(c, map[string][]int{unitKey("fpga", "u250"): {0}}) {
		t.Fatalf("after a gave its units back: %v %v", c, err)
	}
	tab.claim("run-d", map[string][]int{unitKey("npu", "hailo8"): {1}, unitKey("npu", "hailo8") + "x": {0}})
	if _, err := tab.take("run-e", []resource.DeviceAlloc{{Kind: "npu", Model: "hailo8", Count: 2}}); err == nil {
		t.Fatal("a unit claimed by a re-attached run was handed out again")
	}
	if env, paths := deviceEnv(decl, nil); env != nil || paths != nil {
		t.Fatalf("no units: %v %v", env, paths)
	}
}
