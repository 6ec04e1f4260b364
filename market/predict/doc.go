// Package predict owns the online models a node keeps about itself for the
// market core's bids: a forecast of the node's own load and a prediction of
// task runtimes per job type, plus the error tracker (MAPE) the simulator
// uses to score those predictions.
//
// The package is pure and deterministic: it does no I/O, starts no
// goroutines, never reads the clock (times and durations are passed in) and
// keeps no global state. Values are not safe for concurrent use; the owner
// serializes calls.
//
// # Runtime prediction
//
// Runtime keeps, per job type, an exponentially weighted mean m and
// variance v of x = ln(runtime in seconds). For the n-th sample the weight
// is w = max(α, 1/n), so the first ⌈1/α⌉ samples are averaged plainly (no
// bias toward the first run) and later ones are smoothed with weight α:
//
//	d = x − m
//	m ← m + w·d
//	v ← (1 − w)·(v + w·d²)
//
// The prediction is the fitted log-normal's median, exp(m) — the
// geometric mean of recent runtimes — and its spread is the fitted
// log-normal's standard deviation, exp(m + v/2)·√(exp(v) − 1).
//
// Working in log space is what makes the model robust: runtimes are
// heavy-tailed and noise is multiplicative, so one run that takes ten times
// as long moves the log mean by α·ln 10 instead of multiplying a linear
// mean. The median exp(m) is reported rather than the log-normal mean
// exp(m + v/2) because it minimizes the expected absolute log error, does
// not explode when a heavy tail inflates v, and scores better on relative
// error (MAPE), the measure the simulator reports. Callers that add
// runtimes up (a queue's expected wait) want the mean instead, which
// Prediction.Mean recovers from Runtime and Stddev. TestLogSpaceBeatsLinear
// measures the choice: when 5% of runs take twenty times as long, the MAPE
// of exp(m) is about a third of that of an EWMA of raw runtimes with the
// same weights, and well under that of the log-normal mean.
//
// The source of a prediction follows a fixed order: history once a type has
// MinSamples samples; otherwise the user's estimate when one is given;
// otherwise whatever history there is; and the configured Default only when
// there is neither history nor estimate. Once history is trusted it wins
// over the estimate outright: users over-estimate (in the Parallel
// Workloads Archive logs requested time is typically several times the
// real runtime), so blending the two would only pull the prediction off.
//
// # Load forecast
//
// Load runs Holt's double exponential smoothing (level ℓ and trend b) over
// load samples in [0, 1] taken at irregular times. A step is the mean
// spacing of the samples seen so far, and k is the number of steps since
// the previous sample. A sample y updates the model with weights that grow
// with the gap, αₖ = 1 − (1 − α)^k and βₖ = 1 − (1 − β)^k, so that with
// evenly spaced samples (k = 1) this is exactly textbook Holt:
//
//	ℓ' = αₖ·y + (1 − αₖ)·(ℓ + b·k)
//	b' = βₖ·(ℓ' − ℓ)/k + (1 − βₖ)·b
//
// The forecast h steps after the last sample is ℓ + b·h, clamped to [0, 1].
// The first sample sets ℓ and leaves b = 0. The trend is kept per unit of
// time internally, so it stays consistent as the mean spacing moves; Trend
// reports it per current step.
//
// # Error tracking
//
// MAPE accumulates the mean absolute percentage error
// (1/N)·Σ |predicted − actual| / actual as a fraction (0.2 means 20%).
package predict
