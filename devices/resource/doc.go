// Package resource is Agora's resource vocabulary: the vector a node
// advertises (capacity and free), the request a task makes, size and CPU
// parsing, and the pure fit and allocation arithmetic shared by the market
// core, the runtime and the simulator.
//
// It owns no I/O and must never import libp2p, badger, NVML or os/exec:
// discovery lives in package devices, which fills these types in.
package resource
