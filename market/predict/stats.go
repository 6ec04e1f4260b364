package predict

import (
	"math"
	"time"
)

// typeStats is the online model of one job type: an exponentially weighted
// mean and variance of ln(runtime in seconds).
type typeStats struct {
	name    string
	n       int     // samples observed
	logMean float64 // m, EWMA of ln(seconds)
	logVar  float64 // v, EWMA variance of ln(seconds)
}

// observe folds one runtime, in seconds, into the model with weight
// max(alpha, 1/n), using the incremental weighted-variance update.
func (s *typeStats) observe(seconds, alpha float64) {
	x := math.Log(seconds)
	s.n++
	w := max(alpha, 1/float64(s.n))
	d := x - s.logMean
	s.logMean += w * d
	s.logVar = (1 - w) * (s.logVar + w*d*d)
}

// samples returns the sample count of s, zero for a nil s.
func (s *typeStats) samples() int {
	if s == nil {
		return 0
	}
	return s.n
}

// prediction returns the history prediction of s: the fitted log-normal's
// median, at least a nanosecond, and its standard deviation.
func (s *typeStats) prediction() Prediction {
	median := math.Exp(s.logMean)
	sd := math.Exp(s.logMean+s.logVar/2) * math.Sqrt(math.Expm1(s.logVar))
	return Prediction{
		Runtime: max(secondsToDuration(median), 1),
		Stddev:  secondsToDuration(sd),
		Samples: s.n,
		Source:  SourceHistory,
	}
}

// secondsToDuration converts seconds to a Duration rounded to the
// nanosecond and saturated at the Duration range; NaN becomes zero.
func secondsToDuration(sec float64) time.Duration {
	ns := math.Round(sec * float64(time.Second))
	switch {
	case math.IsNaN(ns):
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(ns)
}
