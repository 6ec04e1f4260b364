package predict

import (
	"math"
	"time"
)

// Sources of a Prediction.
const (
	// SourceHistory means the prediction comes from observed runtimes.
	SourceHistory = "history"
	// SourceEstimate means the prediction is the caller's user estimate.
	SourceEstimate = "estimate"
	// SourceDefault means the prediction is the configured default.
	SourceDefault = "default"
)

// Prediction is a runtime prediction for one job type.
type Prediction struct {
	// Runtime is the predicted runtime: the median of the fitted model for
	// history, else the estimate or the default.
	Runtime time.Duration
	// Stddev is the standard deviation of the fitted model; it is zero
	// unless Source is SourceHistory with at least two samples.
	Stddev time.Duration
	// Samples is the number of runtimes observed for the job type, whatever
	// the source.
	Samples int
	// Source says where Runtime came from: SourceHistory, SourceEstimate or
	// SourceDefault.
	Source string
}

// Mean returns the mean of the log-normal whose median is p.Runtime and
// whose standard deviation is p.Stddev; with no spread it is p.Runtime.
// Use it where predictions are added up, as in a queue's expected wait.
func (p Prediction) Mean() time.Duration {
	if p.Stddev <= 0 || p.Runtime <= 0 {
		return p.Runtime
	}
	// With u = exp(v): Stddev² = Runtime²·u·(u − 1), Mean = Runtime·√u.
	ratio := p.Stddev.Seconds() / p.Runtime.Seconds()
	u := (1 + math.Sqrt(1+4*ratio*ratio)) / 2
	return secondsToDuration(p.Runtime.Seconds() * math.Sqrt(u))
}
