package devices

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	logging "github.com/ipfs/go-log/v2"

	"github.com/agora-sched/agora/devices/resource"
)

var log = logging.Logger("devices")

// DiscoverOptions says where and how Discover looks.
type DiscoverOptions struct {
	// DiskPath is the node's data directory: the total size of the file
	// system holding it is the node's disk capacity. Nothing is created;
	// when the directory does not exist yet, its nearest existing parent
	// is measured. Empty means os.TempDir().
	DiskPath string

	// DisableNVML skips NVML altogether, so that no GPUs are discovered.
	DisableNVML bool

	// FS is the file system that /proc and /sys/fs/cgroup are read from,
	// with unrooted paths such as "proc/meminfo". Nil means the real
	// root; tests pass a fstest.MapFS.
	FS fs.FS

	// numCPU replaces runtime.NumCPU when positive (tests).
	numCPU int
	// probe replaces the NVML probe when set (tests).
	probe func() gpuProbe
}

// Info is what Discover found: the node's capacity and facts about the
// machine worth showing an operator.
type Info struct {
	// Capacity is the discovered resource vector, before the resources
	// file is applied: CPU in millicores, memory and disk in bytes, and
	// one GPU per NVIDIA device with Free = resource.WholeGPU.
	Capacity resource.Vector `json:"capacity"`
	// Hostname is the machine's host name, or "" if unknown.
	Hostname string `json:"hostname,omitempty"`
	// OS is runtime.GOOS.
	OS string `json:"os"`
	// Arch is runtime.GOARCH.
	Arch string `json:"arch"`
	// CPUModel is the processor name from /proc/cpuinfo, or "".
	CPUModel string `json:"cpu_model,omitempty"`
	// LogicalCPUs is the number of logical CPUs the process may run on.
	LogicalCPUs int `json:"logical_cpus"`
	// CPUSource names where Capacity.CPU came from: "runtime.NumCPU" or
	// the cgroup quota file that lowered it.
	CPUSource string `json:"cpu_source"`
	// MemTotal is the machine's MemTotal from /proc/meminfo, in bytes,
	// before any cgroup limit (0 when unreadable).
	MemTotal int64 `json:"mem_total"`
	// MemorySource names where Capacity.Memory came from:
	// "/proc/meminfo" or the cgroup limit file that lowered it.
	MemorySource string `json:"memory_source,omitempty"`
	// DiskPath is the path whose file system was measured for
	// Capacity.Disk.
	DiskPath string `json:"disk_path,omitempty"`
	// GPUDriver is the NVIDIA driver version, when NVML is available.
	GPUDriver string `json:"gpu_driver,omitempty"`
	// CUDAVersion is the newest CUDA version the driver supports, such as
	// "12.4", when NVML is available.
	CUDAVersion string `json:"cuda_version,omitempty"`
	// NVMLError says why GPUs are missing: NVML was disabled or could not
	// be initialised, it found no GPU, or some GPUs could not be read.
	// It is "" when every GPU NVML knows of was discovered.
	NVMLError string `json:"nvml_error,omitempty"`
}

// Discover finds the local node's resources. NVML trouble never makes it
// fail: the GPU list is then empty and Info.NVMLError says why. It returns
// an error when memory or disk could not be measured; Info then still
// holds everything that was found, so a caller whose resources file
// declares the missing values may go on.
func Discover(opts DiscoverOptions) (Info, error) {
	fsys := hostFS(opts.FS)
	info := Info{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUModel: cpuModel(fsys)}
	info.Hostname, _ = os.Hostname()

	info.LogicalCPUs = opts.numCPU
	if info.LogicalCPUs <= 0 {
		info.LogicalCPUs = runtime.NumCPU()
	}
	info.Capacity.CPU, info.CPUSource = cpuCapacity(fsys, info.LogicalCPUs)

	var problems []string
	mem, total, src, err := memoryCapacity(fsys)
	if err != nil {
		problems = append(problems, err.Error())
	}
	info.Capacity.Memory, info.MemTotal, info.MemorySource = mem, total, src

	disk, measured, err := diskCapacity(opts.DiskPath)
	if err != nil {
		problems = append(problems, err.Error())
	}
	info.Capacity.Disk, info.DiskPath = disk, measured

	info.Capacity.GPUs = []resource.GPU{}
	if opts.DisableNVML {
		info.NVMLError = "nvml: disabled"
	} else {
		probe := opts.probe
		if probe == nil {
			probe = probeNVML
		}
		p := safeProbe(probe)
		if p.GPUs != nil {
			info.Capacity.GPUs = p.GPUs
		}
		info.GPUDriver, info.CUDAVersion, info.NVMLError = p.Driver, p.CUDA, p.Err
	}

	log.Infow("discovered local resources", "capacity", info.Capacity.String(),
		"disk", resource.FormatSize(info.Capacity.Disk), "cpu_source", info.CPUSource,
		"memory_source", info.MemorySource, "gpu_driver", info.GPUDriver, "nvml", info.NVMLError)
	if len(problems) > 0 {
		return info, fmt.Errorf("devices: %s", strings.Join(problems, "; "))
	}
	return info, nil
}
