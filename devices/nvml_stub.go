//go:build !linux || !cgo

package devices

import "errors"

// errNoNVML explains why this build cannot use NVML.
var errNoNVML = errors.New("nvml: not available in this build (NVML needs linux and cgo)")

// probeNVML reports that this build has no NVML.
func probeNVML() gpuProbe { return gpuProbe{Err: errNoNVML.Error()} }

// stubBackend is the GPU monitor's backend when NVML is not built in.
type stubBackend struct{}

func newNVMLBackend() gpuBackend { return stubBackend{} }

func (stubBackend) open() error                { return errNoNVML }
func (stubBackend) usage() ([]GPUUsage, error) { return nil, errNoNVML }
func (stubBackend) close()                     {}
