//go:build linux && cgo

package devices

import (
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/agora-sched/agora/devices/resource"
)

// mockDevice is an NVML device with the given properties; a Return other
// than SUCCESS in the fields makes that query fail.
func mockDevice(name, uuid string, mem uint64, used uint64, util uint32, major, minor int, ccRet nvml.Return) *mock.Device {
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: mem, Used: used, Free: mem - used}, nvml.SUCCESS
		},
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) { return major, minor, ccRet },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: util}, nvml.SUCCESS
		},
	}
}

// mockNVML is an NVML library with the given devices; a nil device makes
// its handle lookup fail.
func mockNVML(devs ...nvml.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) {
			return 12040, nvml.SUCCESS
		},
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if devs[i] == nil {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

func TestProbeLib(t *testing.T) {
	const g40 = 40 << 30
	lib := mockNVML(
		mockDevice("NVIDIA A100-SXM4-40GB", "GPU-a", g40, 0, 0, 8, 0, nvml.SUCCESS),
		mockDevice("Tesla T4", "GPU-b", 16<<30, 0, 0, 0, 0, nvml.ERROR_NOT_SUPPORTED),
	)
	p := probeLib(lib)
	want := gpuProbe{
		GPUs: []resource.GPU{
			{Index: 0, UUID: "GPU-a", Model: "NVIDIA A100-SXM4-40GB", Memory: g40, Compute: "8.0", Free: resource.WholeGPU},
			{Index: 1, UUID: "GPU-b", Model: "Tesla T4", Memory: 16 << 30, Free: resource.WholeGPU},
		},
		Driver: "550.54.15",
		CUDA:   "12.4",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

func TestProbeLibFailures(t *testing.T) {
	// Init failing: nothing else may be called (the mock panics on any
	// method without a func, and a panic would show in Err).
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_LIBRARY_NOT_FOUND: "nvml: libnvidia-ml.so.1 not found (no NVIDIA driver installed)",
		nvml.ERROR_DRIVER_NOT_LOADED: "nvml: NVIDIA driver not loaded",
		nvml.ERROR_UNKNOWN:           "nvml: init: ERROR_UNKNOWN",
	} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		p := probeLib(lib)
		if p.Err != want || p.GPUs != nil {
			t.Errorf("Init %v: %+v, want Err %q", ret, p, want)
		}
	}

	p := probeLib(mockNVML())
	if p.Err != "nvml: no GPUs found" || len(p.GPUs) != 0 || p.Driver == "" {
		t.Errorf("no devices: %+v", p)
	}

	p = probeLib(mockNVML(mockDevice("A", "GPU-a", 1, 0, 0, 9, 0, nvml.SUCCESS), nil))
	if len(p.GPUs) != 1 || p.Err != "nvml: gpu 1: ERROR_GPU_IS_LOST" {
		t.Errorf("lost device: %+v", p)
	}

	lib := mockNVML()
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { panic("driver exploded") }
	p = probeLib(lib)
	if !strings.Contains(p.Err, "panic: driver exploded") || len(lib.ShutdownCalls()) != 1 {
		t.Errorf("panic: %+v, %d shutdowns", p, len(lib.ShutdownCalls()))
	}

	nameless := mockDevice("", "GPU-x", 1, 0, 0, 0, 0, nvml.ERROR_NOT_SUPPORTED)
	nameless.GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
	p = probeLib(mockNVML(nameless))
	if len(p.GPUs) != 1 || p.GPUs[0].Model != "NVIDIA GPU" {
		t.Errorf("nameless device: %+v", p)
	}
}

func TestNVMLBackendUsage(t *testing.T) {
	lib := mockNVML(
		mockDevice("A", "GPU-a", 100, 25, 50, 8, 0, nvml.SUCCESS),
		nil,
		mockDevice("B", "GPU-c", 200, 200, 100, 8, 0, nvml.SUCCESS),
	)
	b := &nvmlBackend{lib: lib}
	if err := b.open(); err != nil {
		t.Fatal(err)
	}
	u, err := b.usage()
	if err != nil {
		t.Fatal(err)
	}
	want := []GPUUsage{
		{Index: 0, UUID: "GPU-a", Utilization: 0.5, MemUsed: 25, MemTotal: 100},
		{Index: 2, UUID: "GPU-c", Utilization: 1, MemUsed: 200, MemTotal: 200},
	}
	if !reflect.DeepEqual(u, want) {
		t.Errorf("got %+v, want %+v", u, want)
	}
	b.close()
	if len(lib.ShutdownCalls()) != 1 {
		t.Error("close did not shut NVML down")
	}

	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNINITIALIZED }
	if _, err := b.usage(); err == nil || err.Error() != "nvml: device count: ERROR_UNINITIALIZED" {
		t.Errorf("count failure: %v", err)
	}
	lib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	if err := b.open(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("open failure: %v", err)
	}
}

func TestProbeNVMLSystem(t *testing.T) {
	// Whatever this machine has, the real probe must not fail or panic,
	// and must say why when it finds no GPU.
	p := probeNVML()
	if len(p.GPUs) == 0 && p.Err == "" {
		t.Errorf("no GPUs and no reason: %+v", p)
	}
	for i, g := range p.GPUs {
		if g.Index != i || g.Model == "" || g.Memory <= 0 || g.Free != resource.WholeGPU {
			t.Errorf("implausible %+v", g)
		}
	}
	t.Logf("probe: %+v", p)
}
