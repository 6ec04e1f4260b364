package devices

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agora-sched/agora/devices/resource"
)

// requireLinux skips tests that need /proc or statfs.
func requireLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc and statfs (linux)")
	}
}

func TestDiscoverRealMachine(t *testing.T) {
	requireLinux(t)
	info, err := Discover(DiscoverOptions{DiskPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := info.Capacity
	if c.CPU <= 0 || c.Memory <= 0 || c.Disk <= 0 {
		t.Errorf("capacity %v, disk %d", c, c.Disk)
	}
	if c.GPUs == nil || (len(c.GPUs) == 0 && info.NVMLError == "") {
		t.Errorf("GPUs %#v with NVMLError %q", c.GPUs, info.NVMLError)
	}
	if info.LogicalCPUs <= 0 || c.CPU > int64(info.LogicalCPUs)*1000 || info.CPUSource == "" || info.MemorySource == "" {
		t.Errorf("info %+v", info)
	}
	if info.MemTotal > 0 && c.Memory > info.MemTotal {
		t.Errorf("memory %d above MemTotal %d", c.Memory, info.MemTotal)
	}
	b, err := json.Marshal(info)
	if err != nil || !strings.Contains(string(b), `"capacity":{"cpu":`) {
		t.Errorf("json %s, %v", b, err)
	}
	t.Logf("%s", b)
}

func TestDiscoverNVMLDisabled(t *testing.T) {
	requireLinux(t)
	called := false
	info, err := Discover(DiscoverOptions{DiskPath: t.TempDir(), DisableNVML: true, probe: func() gpuProbe {
		called = true
		return gpuProbe{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if called || info.Capacity.GPUs == nil || len(info.Capacity.GPUs) != 0 || info.NVMLError != "nvml: disabled" {
		t.Errorf("probe called %v, GPUs %#v, NVMLError %q", called, info.Capacity.GPUs, info.NVMLError)
	}
}

func TestDiscoverFakeHost(t *testing.T) {
	requireLinux(t)
	fsys := fakeFS(map[string]string{
		"proc/cpuinfo":                   "processor\t: 0\nmodel name\t: Fake CPU @ 3GHz\n",
		"proc/meminfo":                   meminfo16G,
		"proc/self/cgroup":               "0::/agora\n",
		"sys/fs/cgroup/agora/cpu.max":    "150000 100000\n",
		"sys/fs/cgroup/agora/memory.max": "4294967296\n",
	})
	gpus := []resource.GPU{
		{Index: 0, UUID: "GPU-a", Model: "NVIDIA H100", Memory: 80 << 30, Compute: "9.0", Free: resource.WholeGPU},
		{Index: 1, UUID: "GPU-b", Model: "NVIDIA H100", Memory: 80 << 30, Compute: "9.0", Free: resource.WholeGPU},
	}
	info, err := Discover(DiscoverOptions{
		DiskPath: t.TempDir(),
		FS:       fsys,
		numCPU:   8,
		probe:    func() gpuProbe { return gpuProbe{GPUs: gpus, Driver: "550.1", CUDA: "12.4"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := info.Capacity
	if c.CPU != 1500 || info.CPUSource != "/sys/fs/cgroup/agora/cpu.max" || info.LogicalCPUs != 8 {
		t.Errorf("cpu %d from %s (%d logical)", c.CPU, info.CPUSource, info.LogicalCPUs)
	}
	if c.Memory != 4<<30 || info.MemTotal != 16<<30 || info.MemorySource != "/sys/fs/cgroup/agora/memory.max" {
		t.Errorf("memory %d of %d from %s", c.Memory, info.MemTotal, info.MemorySource)
	}
	if info.CPUModel != "Fake CPU @ 3GHz" || len(c.GPUs) != 2 || c.GPUs[1].UUID != "GPU-b" {
		t.Errorf("info %+v", info)
	}
	if info.GPUDriver != "550.1" || info.CUDAVersion != "12.4" || info.NVMLError != "" {
		t.Errorf("driver %q cuda %q nvml %q", info.GPUDriver, info.CUDAVersion, info.NVMLError)
	}
	if got := c.String(); got != "1.5cpu 4GiB 2×NVIDIA H100" {
		t.Errorf("String() = %q", got)
	}
}

func TestDiscoverProbePanics(t *testing.T) {
	requireLinux(t)
	info, err := Discover(DiscoverOptions{DiskPath: t.TempDir(), probe: func() gpuProbe { panic("nvml crashed") }})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Capacity.GPUs) != 0 || !strings.Contains(info.NVMLError, "panic: nvml crashed") {
		t.Errorf("GPUs %v, NVMLError %q", info.Capacity.GPUs, info.NVMLError)
	}
}

func TestDiscoverPartialFailure(t *testing.T) {
	// No meminfo, no cgroup limit and an unusable disk path: an error
	// naming both, and everything else still filled in.
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := Discover(DiscoverOptions{DiskPath: filepath.Join(file, "sub"), FS: fakeFS(nil), numCPU: 2, DisableNVML: true})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "devices: memory: open proc/meminfo:") || !strings.Contains(msg, "; disk ") || strings.Contains(msg, "\n") {
		t.Errorf("error %q", msg)
	}
	if info.Capacity.CPU != 2000 || info.Capacity.Memory != 0 || info.Capacity.Disk != 0 {
		t.Errorf("capacity %v", info.Capacity)
	}
}

func TestDiscoverDiskPath(t *testing.T) {
	requireLinux(t)
	dir := t.TempDir()
	notYet := filepath.Join(dir, "data", "agora")
	info, err := Discover(DiscoverOptions{DiskPath: notYet, DisableNVML: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.DiskPath != dir || info.Capacity.Disk <= 0 {
		t.Errorf("measured %s (%d bytes), want %s", info.DiskPath, info.Capacity.Disk, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("Discover created the data directory: %v", err)
	}

	info, err = Discover(DiscoverOptions{DisableNVML: true})
	if err != nil || info.Capacity.Disk <= 0 || info.DiskPath == "" {
		t.Errorf("default disk path: %s %d %v", info.DiskPath, info.Capacity.Disk, err)
	}
}
