// Package metrics computes the figures of a finished simulation from its
// records: per-task submit, start and finish times and requests, the
// nodes' capacities, the schedulers' runtime predictions and the message
// counts. Compute returns the Report that `agora sim` prints and the
// benchmark report compares; the series and CDF helpers feed its plots.
//
// It is pure arithmetic: no clock, no randomness, no I/O. It imports only
// the resource vocabulary (devices/resource), never the simulator, the
// workload readers or the market, so that any driver — the simulator, a
// replay of a real node's log — can feed it.
package metrics
