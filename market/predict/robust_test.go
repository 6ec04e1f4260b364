package predict

import (
	"math/rand"
	"testing"
	"time"
)

// TestLogSpaceBeatsLinear backs the model choice in the package comment:
// with occasional outliers (5% of runs take 20 times as long), the log-space
// median keeps its relative error far below both an EWMA of raw runtimes
// (same weights) and the fitted log-normal's mean.
func TestLogSpaceBeatsLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	nz := logNormal(0.1)
	draw := func() time.Duration {
		d := nz.sample(rng, 5*time.Minute)
		if rng.Float64() < 0.05 {
			d *= 20
		}
		return d
	}
	r := NewRuntime(RuntimeConfig{})
	var linear float64 // EWMA of raw runtimes with weight max(0.3, 1/n)
	n := 0
	observe := func(d time.Duration) {
		r.Observe("etl", d)
		n++
		linear += max(DefaultAlpha, 1/float64(n)) * (float64(d) - linear)
	}
	for range 10 {
		observe(draw())
	}
	var median, mean, lin MAPE
	for range 1000 {
		p := r.Predict("etl", 0)
		actual := draw()
		median.Add(p.Runtime, actual)
		mean.Add(p.Mean(), actual)
		lin.Add(time.Duration(linear), actual)
		observe(actual)
	}
	t.Logf("MAPE: log-space median %.4f, log-normal mean %.4f, linear EWMA %.4f", median.Value(), mean.Value(), lin.Value())
	if median.Value()*2 > lin.Value() {
		t.Errorf("log-space median MAPE %.3f is not under half the linear EWMA's %.3f", median.Value(), lin.Value())
	}
	if median.Value() >= mean.Value() {
		t.Errorf("log-space median MAPE %.3f is not under the log-normal mean's %.3f", median.Value(), mean.Value())
	}
}
