// Command agora-report runs the simulator's benchmark experiments — the
// synthetic mix under every scheduler, wall time against node count, the
// SWF logs and the Alibaba GPU trace — and writes docs/performance.md
// with its tables and PNG plots. `make bench` runs it after the
// real-network benchmarks, whose `go test -bench` output it folds in.
package main
