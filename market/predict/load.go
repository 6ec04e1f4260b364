package predict

import (
	"math"
	"time"
)

// Default smoothing weights of a Load.
const (
	// DefaultLoadAlpha is the level weight NewLoad uses for an alpha
	// outside (0, 1].
	DefaultLoadAlpha = 0.5
	// DefaultLoadBeta is the trend weight NewLoad uses for a beta outside
	// (0, 1].
	DefaultLoadBeta = 0.3
)

// Load forecasts a node's load (a fraction in [0, 1], such as the share of
// CPU busy) with Holt's double exponential smoothing over samples taken at
// irregular times. The zero value is not usable; create one with NewLoad.
// A Load is not safe for concurrent use.
type Load struct {
	alpha, beta float64

	n       int       // samples accepted
	first   time.Time // time of the first sample
	last    time.Time // time of the latest sample
	level   float64   // ℓ, the smoothed load at last
	perSec  float64   // trend, in load per second
	stepSec float64   // mean sample spacing in seconds; 0 before two samples
}

// NewLoad returns an empty Load with level weight alpha and trend weight
// beta. Weights outside (0, 1] become DefaultLoadAlpha and DefaultLoadBeta.
func NewLoad(alpha, beta float64) *Load {
	if !(alpha > 0 && alpha <= 1) {
		alpha = DefaultLoadAlpha
	}
	if !(beta > 0 && beta <= 1) {
		beta = DefaultLoadBeta
	}
	return &Load{alpha: alpha, beta: beta}
}

// Observe records the load value sampled at time at. The value is clamped
// to [0, 1]; NaN values and samples not later than the previous one are
// ignored. The first sample sets the level, with no trend.
func (l *Load) Observe(at time.Time, value float64) {
	if math.IsNaN(value) {
		return
	}
	value = clamp01(value)
	if l.n == 0 {
		l.n, l.first, l.last, l.level = 1, at, at, value
		return
	}
	if !at.After(l.last) {
		return
	}
	dt := at.Sub(l.last).Seconds()
	l.n++
	l.stepSec = at.Sub(l.first).Seconds() / float64(l.n-1)
	k := dt / l.stepSec
	a := 1 - math.Pow(1-l.alpha, k)
	b := 1 - math.Pow(1-l.beta, k)
	level := a*value + (1-a)*(l.level+l.perSec*dt)
	l.perSec = b*(level-l.level)/dt + (1-b)*l.perSec
	l.level = level
	l.last = at
}

// Forecast returns the load expected at time at: the level plus the trend
// times the steps elapsed since the latest sample, clamped to [0, 1]. Times
// before the latest sample forecast the level; with no samples it is 0.
func (l *Load) Forecast(at time.Time) float64 {
	elapsed := max(at.Sub(l.last).Seconds(), 0)
	return clamp01(l.level + l.perSec*elapsed)
}

// Level returns the smoothed load at the latest sample, unclamped.
func (l *Load) Level() float64 { return l.level }

// Trend returns the smoothed change in load per step, a step being the
// mean spacing of the samples seen so far; it is 0 before two samples.
func (l *Load) Trend() float64 { return l.perSec * l.stepSec }

// clamp01 limits f to [0, 1].
func clamp01(f float64) float64 { return min(max(f, 0), 1) }
