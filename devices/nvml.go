//go:build linux && cgo

package devices

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/agora-sched/agora/devices/resource"
)

// nvmlLib is the part of NVML that discovery and the GPU monitor use.
// systemNVML and go-nvml's mock.Interface both satisfy it.
type nvmlLib interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
}

// systemNVML is the process's one NVML library handle (go-nvml's package
// functions), shared so that concurrent users load libnvidia-ml once and
// reference-count its initialisation.
type systemNVML struct{}

func (systemNVML) Init() nvml.Return                  { return nvml.Init() }
func (systemNVML) Shutdown() nvml.Return              { return nvml.Shutdown() }
func (systemNVML) DeviceGetCount() (int, nvml.Return) { return nvml.DeviceGetCount() }
func (systemNVML) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return nvml.DeviceGetHandleByIndex(i)
}
func (systemNVML) SystemGetDriverVersion() (string, nvml.Return) {
	return nvml.SystemGetDriverVersion()
}
func (systemNVML) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return nvml.SystemGetCudaDriverVersion()
}

// probeNVML lists the system's GPUs through NVML.
func probeNVML() gpuProbe { return probeLib(systemNVML{}) }

// probeLib initialises lib, lists its GPUs and shuts it down again. Any
// failure, a panic included, is reported in gpuProbe.Err. No NVML
// function but Init is called unless Init succeeded: go-nvml calls into
// an unloaded library would crash the process.
func probeLib(lib nvmlLib) (p gpuProbe) {
	defer func() {
		if r := recover(); r != nil {
			p = gpuProbe{Err: fmt.Sprintf("nvml: panic: %v", r)}
		}
	}()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return gpuProbe{Err: initError(ret)}
	}
	defer lib.Shutdown()

	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		p.Driver = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS && v > 0 {
		p.CUDA = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		p.Err = "nvml: device count: " + ret.Error()
		return p
	}
	var problems []string
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			problems = append(problems, fmt.Sprintf("gpu %d: %s", i, ret.Error()))
			continue
		}
		p.GPUs = append(p.GPUs, describeGPU(i, d))
	}
	switch {
	case len(problems) > 0:
		p.Err = "nvml: " + strings.Join(problems, "; ")
	case n == 0:
		p.Err = "nvml: no GPUs found"
	}
	return p
}

// describeGPU reads one device's capacity. A field NVML cannot report is
// left empty (or, for the model, named generically) rather than losing
// the GPU.
func describeGPU(index int, d nvml.Device) resource.GPU {
	g := resource.GPU{Index: index, Model: "NVIDIA GPU", Free: resource.WholeGPU}
	if name, ret := d.GetName(); ret == nvml.SUCCESS && strings.TrimSpace(name) != "" {
		g.Model = strings.TrimSpace(name)
	}
	if uuid, ret := d.GetUUID(); ret == nvml.SUCCESS {
		g.UUID = uuid
	}
	if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.Memory = int64(mem.Total)
	}
	if major, minor, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		g.Compute = fmt.Sprintf("%d.%d", major, minor)
	}
	return g
}

// initError explains a failed nvml.Init in words an operator can act on.
func initError(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "nvml: libnvidia-ml.so.1 not found (no NVIDIA driver installed)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "nvml: NVIDIA driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "nvml: no permission to access the NVIDIA devices"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "nvml: driver and libnvidia-ml versions differ (reload the driver or reboot)"
	}
	return "nvml: init: " + ret.Error()
}

// nvmlBackend feeds the GPU monitor from NVML.
type nvmlBackend struct {
	lib nvmlLib
}

func newNVMLBackend() gpuBackend { return &nvmlBackend{lib: systemNVML{}} }

func (b *nvmlBackend) open() error {
	if ret := b.lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("%s", initError(ret))
	}
	return nil
}

func (b *nvmlBackend) close() { b.lib.Shutdown() }

// usage reads each GPU's utilisation and memory. A GPU that cannot be read
// is left out; failing to count the GPUs at all is an error, after which
// the monitor initialises NVML again.
func (b *nvmlBackend) usage() ([]GPUUsage, error) {
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: device count: %s", ret.Error())
	}
	out := make([]GPUUsage, 0, n)
	for i := 0; i < n; i++ {
		d, ret := b.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		u := GPUUsage{Index: i}
		if uuid, ret := d.GetUUID(); ret == nvml.SUCCESS {
			u.UUID = uuid
		}
		if r, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
			u.Utilization = min(float64(r.Gpu)/100, 1)
		}
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			u.MemUsed, u.MemTotal = int64(mem.Used), int64(mem.Total)
		}
		out = append(out, u)
	}
	return out, nil
}
