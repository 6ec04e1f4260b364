// Package devices discovers the local node's resources: the capacity
// vector it advertises (CPU cores honouring cgroup quotas, memory honouring
// cgroup limits, the size of the data directory's file system, and NVIDIA
// GPUs through NVML), the operator's resources file that overrides or adds
// to what was discovered, and a sampler of live CPU, memory and GPU usage.
//
// It fills in the types of package resource and owns all of the I/O that
// package resource must not do: reading /proc and cgroup files, statfs and
// NVML. It must not import libp2p, badger or the market: the node wires it
// in, and it knows nothing of peers, storage or scheduling.
//
// NVML is optional. On a machine without an NVIDIA driver, without
// libnvidia-ml or built without cgo, discovery reports no GPUs and says
// why in Info.NVMLError; it never fails or panics because of NVML.
package devices
