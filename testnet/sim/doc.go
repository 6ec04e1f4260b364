// Package sim is Agora's deterministic discrete-event simulator: it runs a
// workload on a simulated cluster under the market (every node a real
// market.Market driven in virtual time) or under a central baseline
// scheduler, and reports the metrics of testnet/sim/metrics.
package sim
