package devices

import (
	"fmt"
	"io/fs"
	"sync"
)

// Usage is the node's live load at one moment.
type Usage struct {
	// CPUBusy is the fraction (0..1) of the whole machine's CPU time that
	// was busy since the previous sample (since boot for the first).
	CPUBusy float64 `json:"cpu_busy"`
	// MemUsed is the memory in use, in bytes: MemTotal less MemAvailable.
	MemUsed int64 `json:"mem_used"`
	// MemAvailable is the memory available for new work without
	// swapping, in bytes.
	MemAvailable int64 `json:"mem_available"`
	// GPUs is the load of each GPU; empty where there are none or NVML is
	// unavailable.
	GPUs []GPUUsage `json:"gpus"`
}

// SamplerOptions says where a Sampler reads from.
type SamplerOptions struct {
	// FS is the file system /proc is read from, with unrooted paths such
	// as "proc/stat". Nil means the real root.
	FS fs.FS
	// GPUs reports per-GPU load, such as a GPUMonitor's Usage method.
	// Nil means no GPU figures.
	GPUs func() []GPUUsage
}

// Sampler computes the node's live usage from successive readings of
// /proc/stat and /proc/meminfo. It starts no goroutines: the node calls
// Sample on its own ticker. A Sampler is safe for concurrent use.
type Sampler struct {
	fsys fs.FS
	gpus func() []GPUUsage

	mu   sync.Mutex
	prev cpuTimes // the previous /proc/stat reading
	last float64  // the previous CPUBusy
}

// NewSampler returns a sampler reading from opts.
func NewSampler(opts SamplerOptions) *Sampler {
	return &Sampler{fsys: hostFS(opts.FS), gpus: opts.GPUs}
}

// Sample reads the current usage. CPUBusy is the busy share of the CPU
// time elapsed since the previous call, so the first call reports the
// average since boot. It returns an error, prefixed "devices: sample:",
// when /proc/stat or /proc/meminfo cannot be read or parsed.
func (s *Sampler) Sample() (Usage, error) {
	u, err := s.sampleHost()
	if err != nil {
		return Usage{}, err
	}
	if s.gpus != nil {
		if g := s.gpus(); g != nil {
			u.GPUs = g
		}
	}
	return u, nil
}

// sampleHost reads CPU and memory. It holds the lock throughout, so that
// concurrent calls see their /proc/stat readings in order.
func (s *Sampler) sampleHost() (Usage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := readCPUTimes(s.fsys)
	if err != nil {
		return Usage{}, fmt.Errorf("devices: sample: %w", err)
	}
	mi, err := readMeminfo(s.fsys)
	if err != nil {
		return Usage{}, fmt.Errorf("devices: sample: %w", err)
	}
	u := Usage{CPUBusy: s.cpuBusy(now), MemAvailable: memAvailable(mi), GPUs: []GPUUsage{}}
	u.MemUsed = max(mi["MemTotal"]-u.MemAvailable, 0)
	return u, nil
}

// cpuBusy is the busy fraction between the previous reading and now, and
// makes now the previous reading. When no clock tick has passed since the
// previous reading, the previous fraction is repeated. Counters that went
// backwards (a CPU taken offline) give 0 and start afresh. The caller
// holds s.mu.
func (s *Sampler) cpuBusy(now cpuTimes) float64 {
	prev := s.prev
	switch {
	case now.total == prev.total && now.busy == prev.busy:
		return s.last
	case now.total <= prev.total || now.busy < prev.busy:
		s.prev, s.last = now, 0
		return 0
	}
	f := float64(now.busy-prev.busy) / float64(now.total-prev.total)
	s.prev, s.last = now, min(max(f, 0), 1)
	return s.last
}
