package predict

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// t0 is the time of the first load sample in these tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at returns t0 plus sec seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func TestNewLoadDefaults(t *testing.T) {
	tests := []struct {
		alpha, beta, wantA, wantB float64
	}{
		{0, 0, 0.5, 0.3},
		{-1, -1, 0.5, 0.3},
		{2, 1.5, 0.5, 0.3},
		{math.NaN(), math.NaN(), 0.5, 0.3},
		{0.8, 0.1, 0.8, 0.1},
		{1, 1, 1, 1},
	}
	for _, tt := range tests {
		l := NewLoad(tt.alpha, tt.beta)
		if l.alpha != tt.wantA || l.beta != tt.wantB {
			t.Errorf("NewLoad(%v, %v) weights = %v, %v, want %v, %v", tt.alpha, tt.beta, l.alpha, l.beta, tt.wantA, tt.wantB)
		}
	}
}

// TestLoadMatchesTextbookHolt checks that with evenly spaced samples the
// model is exactly Holt's linear method.
func TestLoadMatchesTextbookHolt(t *testing.T) {
	const alpha, beta = 0.5, 0.3
	ys := []float64{0.2, 0.25, 0.4, 0.35, 0.5, 0.55, 0.5, 0.7}
	l := NewLoad(alpha, beta)
	var level, trend float64
	for i, y := range ys {
		l.Observe(at(10*float64(i)), y)
		if i == 0 {
			level = y
		} else {
			prev := level
			level = alpha*y + (1-alpha)*(level+trend)
			trend = beta*(level-prev) + (1-beta)*trend
		}
		if math.Abs(l.Level()-level) > 1e-12 || math.Abs(l.Trend()-trend) > 1e-12 {
			t.Fatalf("after sample %d: level, trend = %v, %v, want %v, %v", i, l.Level(), l.Trend(), level, trend)
		}
	}
	if got, want := l.Forecast(at(70+30)), level+3*trend; math.Abs(got-want) > 1e-12 {
		t.Errorf("Forecast 3 steps ahead = %v, want %v", got, want)
	}
}

func TestLoadForecasts(t *testing.T) {
	tests := []struct {
		name    string
		times   func(i int) float64 // seconds of sample i
		value   func(sec float64) float64
		samples int
		ahead   float64 // seconds after the last sample
		want    float64
		tol     float64
	}{
		{"constant", every(10), func(float64) float64 { return 0.42 }, 5, 300, 0.42, 1e-12},
		{"linear ramp", every(10), ramp(0.1, 0.001), 60, 50, 0.1 + 0.001*(590+50), 1e-3},
		{"linear ramp, irregular spacing", jittered(10, 5), ramp(0.1, 0.001), 60, 50, -1, 1e-3},
		{"falling ramp", every(5), ramp(0.9, -0.002), 80, 30, 0.9 - 0.002*(395+30), 1e-3},
		{"clamped above", every(10), ramp(0.2, 0.001), 40, 3600, 1, 0},
		{"clamped below", every(10), ramp(0.8, -0.001), 40, 3600, 0, 0},
		{"inputs clamped", every(10), func(float64) float64 { return 1.7 }, 5, 10, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLoad(0, 0)
			var last float64
			for i := range tt.samples {
				last = tt.times(i)
				l.Observe(at(last), tt.value(last))
			}
			want := tt.want
			if want < 0 { // the series' own value at the forecast time
				want = tt.value(last + tt.ahead)
			}
			if got := l.Forecast(at(last + tt.ahead)); math.Abs(got-want) > tt.tol {
				t.Errorf("Forecast = %v, want %v ± %v", got, want, tt.tol)
			}
		})
	}
}

// every returns sample times spaced step seconds apart.
func every(step float64) func(int) float64 {
	return func(i int) float64 { return step * float64(i) }
}

// jittered returns sample times with gaps of step ± jitter seconds, drawn
// from a fixed seed.
func jittered(step, jitter float64) func(int) float64 {
	rng := rand.New(rand.NewSource(5))
	var times []float64
	return func(i int) float64 {
		for len(times) <= i {
			next := 0.0
			if n := len(times); n > 0 {
				next = times[n-1] + step + jitter*(2*rng.Float64()-1)
			}
			times = append(times, next)
		}
		return times[i]
	}
}

// ramp returns the series start + slope·sec.
func ramp(start, slope float64) func(float64) float64 {
	return func(sec float64) float64 { return start + slope*sec }
}

func TestLoadIrregularSpacing(t *testing.T) {
	// Bursts of samples one second apart with ten-second gaps between them,
	// over a ramp of 0.01/s: the long gaps must not be read as jumps.
	times := []float64{0, 1, 2, 12, 13, 14, 15, 16, 26, 27, 28}
	l := NewLoad(0, 0)
	for _, sec := range times {
		l.Observe(at(sec), 0.2+0.01*sec)
	}
	step := 28.0 / 10 // mean spacing
	if got, want := l.Trend(), 0.01*step; math.Abs(got-want) > 0.1*want {
		t.Errorf("Trend = %v, want about %v (0.01/s over a %.1fs step)", got, want, step)
	}
	if got, want := l.Forecast(at(38)), 0.2+0.01*38; math.Abs(got-want) > 0.02 {
		t.Errorf("Forecast 10s on = %v, want about %v", got, want)
	}
}

func TestLoadEdgeCases(t *testing.T) {
	l := NewLoad(0, 0)
	if got := l.Forecast(t0); got != 0 {
		t.Errorf("Forecast with no samples = %v, want 0", got)
	}
	l.Observe(at(0), 0.3)
	if l.Level() != 0.3 || l.Trend() != 0 || l.Forecast(at(100)) != 0.3 {
		t.Errorf("after one sample: level %v trend %v forecast %v, want 0.3, 0, 0.3", l.Level(), l.Trend(), l.Forecast(at(100)))
	}
	l.Observe(at(10), 0.5)
	level, trend := l.Level(), l.Trend()
	l.Observe(at(10), 0.9)        // same time: ignored
	l.Observe(at(5), 0.9)         // earlier: ignored
	l.Observe(at(20), math.NaN()) // NaN: ignored
	if l.Level() != level || l.Trend() != trend {
		t.Errorf("ignored samples changed the model: level %v trend %v, want %v %v", l.Level(), l.Trend(), level, trend)
	}
	if got := l.Forecast(at(0)); got != clamp01(level) {
		t.Errorf("Forecast before the last sample = %v, want the level %v", got, level)
	}
}
