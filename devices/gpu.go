package devices

import (
	"fmt"
	"sync"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// gpuProbe is what one look at NVML found: the GPUs, the driver and CUDA
// versions, and why GPUs are missing, if they are.
type gpuProbe struct {
	GPUs   []resource.GPU
	Driver string
	CUDA   string
	Err    string
}

// safeProbe runs probe and turns a panic into a reported error, so that
// no NVML failure can stop discovery.
func safeProbe(probe func() gpuProbe) (p gpuProbe) {
	defer func() {
		if r := recover(); r != nil {
			p = gpuProbe{Err: fmt.Sprintf("nvml: panic: %v", r)}
		}
	}()
	return probe()
}

// GPUUsage is the live load of one GPU.
type GPUUsage struct {
	// Index is the GPU's NVML index, as in resource.GPU.Index.
	Index int `json:"index"`
	// UUID is the GPU's NVML UUID.
	UUID string `json:"uuid,omitempty"`
	// Utilization is the fraction (0..1) of the last sample period, as
	// NVML measures it, during which a kernel was running on the GPU.
	Utilization float64 `json:"utilization"`
	// MemUsed is the GPU memory in use, in bytes.
	MemUsed int64 `json:"mem_used"`
	// MemTotal is the GPU's total memory, in bytes.
	MemTotal int64 `json:"mem_total"`
}

// gpuBackend is NVML as the GPU monitor sees it. The real one is in
// nvml.go; tests use fakes.
type gpuBackend interface {
	// open initialises the backend; it is called again after a failure.
	open() error
	// usage reads every GPU's load; an error means the backend must be
	// closed and opened again.
	usage() ([]GPUUsage, error)
	// close releases the backend after a successful open.
	close()
}

// gpuRetryInterval is how long the monitor waits after NVML failed before
// it tries to initialise NVML again.
const gpuRetryInterval = time.Minute

// GPUMonitor reports live per-GPU utilisation and memory use through
// NVML, for the sampler. It initialises NVML on first use and keeps it
// initialised, since initialising NVML can take seconds on a machine
// without persistence mode; after a failure it tries again at most once a
// minute. Where NVML is unavailable it reports no GPUs. A GPUMonitor is
// safe for concurrent use; its zero value is not usable, call
// NewGPUMonitor.
type GPUMonitor struct {
	mu       sync.Mutex
	backend  gpuBackend
	now      func() time.Time
	opened   bool
	failedAt time.Time
	err      string
}

// NewGPUMonitor returns a monitor backed by the system's NVML. It does not
// touch NVML until Usage is first called.
func NewGPUMonitor() *GPUMonitor {
	return newGPUMonitor(newNVMLBackend(), time.Now)
}

func newGPUMonitor(b gpuBackend, now func() time.Time) *GPUMonitor {
	return &GPUMonitor{backend: b, now: now}
}

// Usage returns the current load of every GPU NVML can read, ordered by
// index. It returns an empty list, never an error, when NVML is
// unavailable; Err says why.
func (m *GPUMonitor) Usage() []GPUUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.opened {
		if !m.failedAt.IsZero() && m.now().Sub(m.failedAt) < gpuRetryInterval {
			return []GPUUsage{}
		}
		if err := m.call(m.backend.open); err != nil {
			m.fail(err)
			return []GPUUsage{}
		}
		m.opened, m.err = true, ""
	}
	var u []GPUUsage
	err := m.call(func() error {
		var err error
		u, err = m.backend.usage()
		return err
	})
	if err != nil {
		m.closeLocked()
		m.fail(err)
		return []GPUUsage{}
	}
	if u == nil {
		u = []GPUUsage{}
	}
	return u
}

// Err says why the last Usage reported no GPUs because of NVML, or "".
func (m *GPUMonitor) Err() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close releases NVML. A later Usage initialises it again.
func (m *GPUMonitor) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeLocked()
	m.failedAt = time.Time{}
}

func (m *GPUMonitor) closeLocked() {
	if m.opened {
		_ = m.call(func() error { m.backend.close(); return nil })
		m.opened = false
	}
}

func (m *GPUMonitor) fail(err error) {
	if m.err != err.Error() {
		log.Debugw("gpu usage unavailable", "reason", err)
	}
	m.failedAt, m.err = m.now(), err.Error()
}

// call runs f, turning a panic into an error.
func (m *GPUMonitor) call(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("nvml: panic: %v", r)
		}
	}()
	return f()
}
