// Package workload is the simulator's common in-memory form of a
// workload — jobs with their submit times, specs and true runtimes — and
// the readers that fill it in: Standard Workload Format logs (ReadSWF,
// OpenSWF), the Alibaba GPU v2023 pod and node lists (ReadAlibabaPods,
// ReadAlibabaNodes), files of Agora job specs (ReadSpecs), a seeded
// synthetic generator (Synthetic), the simulated cluster file
// (ReadCluster), and ParseSpec, which turns the CLI's workload argument
// into a Source that loads one of these.
//
// Everything here is pure and deterministic: no clock is read, and the
// only randomness is a *rand.Rand seeded from the caller's seed. Readers
// take an io.Reader; only the Open/Load helpers touch the file system.
//
// It imports the resource vocabulary (devices/resource), the job model
// (market/spec) and, for the resources shape of the cluster file, the
// devices package's strict parser. It must never import the market core,
// libp2p, badger or the runtime: the simulator drives those, not this.
package workload
