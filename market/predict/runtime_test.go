package predict

import (
	"math"
	"testing"
	"time"
)

func TestRuntimeConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   RuntimeConfig
		want RuntimeConfig
	}{
		{"zero", RuntimeConfig{}, RuntimeConfig{Alpha: 0.3, Default: 60 * time.Second, MinSamples: 1, MaxTypes: 10000}},
		{"negative", RuntimeConfig{Alpha: -1, Default: -time.Second, MinSamples: -2, MaxTypes: -3},
			RuntimeConfig{Alpha: 0.3, Default: 60 * time.Second, MinSamples: 1, MaxTypes: 10000}},
		{"alpha above one", RuntimeConfig{Alpha: 1.5}, RuntimeConfig{Alpha: 0.3, Default: 60 * time.Second, MinSamples: 1, MaxTypes: 10000}},
		{"alpha NaN", RuntimeConfig{Alpha: math.NaN()}, RuntimeConfig{Alpha: 0.3, Default: 60 * time.Second, MinSamples: 1, MaxTypes: 10000}},
		{"set", RuntimeConfig{Alpha: 1, Default: time.Hour, MinSamples: 3, MaxTypes: 5},
			RuntimeConfig{Alpha: 1, Default: time.Hour, MinSamples: 3, MaxTypes: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewRuntime(tt.in).Config(); got != tt.want {
				t.Errorf("Config() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPredictSources(t *testing.T) {
	tests := []struct {
		name     string
		cfg      RuntimeConfig
		observed []time.Duration
		estimate time.Duration
		want     Prediction
	}{
		{"nothing gives the default", RuntimeConfig{}, nil, 0,
			Prediction{Runtime: time.Minute, Source: SourceDefault}},
		{"configured default", RuntimeConfig{Default: 5 * time.Minute}, nil, 0,
			Prediction{Runtime: 5 * time.Minute, Source: SourceDefault}},
		{"negative estimate counts as none", RuntimeConfig{}, nil, -time.Second,
			Prediction{Runtime: time.Minute, Source: SourceDefault}},
		{"estimate without history", RuntimeConfig{}, nil, 90 * time.Second,
			Prediction{Runtime: 90 * time.Second, Source: SourceEstimate}},
		{"history wins over the estimate", RuntimeConfig{}, []time.Duration{10 * time.Second}, time.Hour,
			Prediction{Runtime: 10 * time.Second, Samples: 1, Source: SourceHistory}},
		{"history without estimate", RuntimeConfig{}, []time.Duration{10 * time.Second}, 0,
			Prediction{Runtime: 10 * time.Second, Samples: 1, Source: SourceHistory}},
		{"thin history loses to the estimate", RuntimeConfig{MinSamples: 3},
			[]time.Duration{10 * time.Second, 10 * time.Second}, time.Hour,
			Prediction{Runtime: time.Hour, Samples: 2, Source: SourceEstimate}},
		{"thin history beats the default", RuntimeConfig{MinSamples: 3},
			[]time.Duration{10 * time.Second, 10 * time.Second}, 0,
			Prediction{Runtime: 10 * time.Second, Samples: 2, Source: SourceHistory}},
		{"enough history wins", RuntimeConfig{MinSamples: 3},
			[]time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}, time.Hour,
			Prediction{Runtime: 10 * time.Second, Samples: 3, Source: SourceHistory}},
		{"non-positive runtimes are ignored", RuntimeConfig{}, []time.Duration{0, -time.Second}, 0,
			Prediction{Runtime: time.Minute, Source: SourceDefault}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRuntime(tt.cfg)
			for _, d := range tt.observed {
				r.Observe("sim", d)
			}
			if got := r.Predict("sim", tt.estimate); got != tt.want {
				t.Errorf("Predict = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPredictTypesAreSeparate(t *testing.T) {
	r := NewRuntime(RuntimeConfig{})
	r.Observe("a", time.Second)
	r.Observe("b", time.Hour)
	if got := r.Predict("a", 0).Runtime; got != time.Second {
		t.Errorf("Predict(a) = %v, want 1s", got)
	}
	if got := r.Predict("b", 0).Runtime; got != time.Hour {
		t.Errorf("Predict(b) = %v, want 1h", got)
	}
	if got := r.Predict("c", 0).Source; got != SourceDefault {
		t.Errorf("Predict(c).Source = %q, want %q", got, SourceDefault)
	}
}

// TestHistoryStatistics checks the model against hand-computed values: the
// first ⌈1/α⌉ samples are averaged in log space, later ones weighted by α.
func TestHistoryStatistics(t *testing.T) {
	r := NewRuntime(RuntimeConfig{Alpha: 0.5})
	// 1/n weighting for n = 1, 2: the geometric mean of 10s and 40s is 20s,
	// the log variance (population) is (ln 2)².
	r.Observe("x", 10*time.Second)
	r.Observe("x", 40*time.Second)
	p := r.Predict("x", 0)
	if p.Runtime != 20*time.Second {
		t.Errorf("Runtime after 10s, 40s = %v, want 20s", p.Runtime)
	}
	v := math.Ln2 * math.Ln2
	wantSD := 20 * math.Exp(v/2) * math.Sqrt(math.Expm1(v))
	if got := p.Stddev.Seconds(); math.Abs(got-wantSD) > 1e-6 {
		t.Errorf("Stddev = %vs, want %vs", got, wantSD)
	}
	// α = 0.5 from n = 3: the log mean moves halfway to ln 80.
	r.Observe("x", 80*time.Second)
	if got, want := r.Predict("x", 0).Runtime.Seconds(), 40.0; math.Abs(got-want) > 1e-6 {
		t.Errorf("Runtime after 80s = %vs, want %vs", got, want)
	}
}

func TestStddevTracksSpread(t *testing.T) {
	r := NewRuntime(RuntimeConfig{})
	for range 20 {
		r.Observe("steady", time.Minute)
	}
	if p := r.Predict("steady", 0); p.Stddev != 0 || p.Runtime != time.Minute {
		t.Errorf("constant runtimes: Predict = %+v, want 1m with zero Stddev", p)
	}
	for i := range 20 {
		r.Observe("jumpy", time.Duration(1+i%2*3)*time.Minute)
	}
	if p := r.Predict("jumpy", 0); p.Stddev < 30*time.Second {
		t.Errorf("alternating 1m/4m: Stddev = %v, want >= 30s", p.Stddev)
	}
}

func TestPredictionMean(t *testing.T) {
	tests := []struct {
		name string
		p    Prediction
		want time.Duration
	}{
		{"no spread", Prediction{Runtime: time.Minute}, time.Minute},
		{"zero runtime", Prediction{Stddev: time.Second}, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Mean(); got != tt.want {
			t.Errorf("%s: Mean() = %v, want %v", tt.name, got, tt.want)
		}
	}
	// A log-normal with median 100s and log variance v has mean 100·e^(v/2).
	r := NewRuntime(RuntimeConfig{})
	r.Restore([]TypeStats{{Type: "x", Samples: 5, LogMean: math.Log(100), LogVar: 0.5}})
	got := r.Predict("x", 0).Mean().Seconds()
	if want := 100 * math.Exp(0.25); math.Abs(got-want) > 1e-6 {
		t.Errorf("Mean() = %vs, want %vs", got, want)
	}
}

func TestEvictsLeastRecentlyUpdated(t *testing.T) {
	r := NewRuntime(RuntimeConfig{MaxTypes: 3})
	for _, typ := range []string{"a", "b", "c"} {
		r.Observe(typ, time.Second)
	}
	r.Observe("a", time.Second) // a is now the most recently updated
	r.Predict("b", 0)           // predicting does not count as an update
	r.Observe("d", time.Second) // evicts b
	if r.Len() != 3 {
		t.Fatalf("Len() = %d, want 3", r.Len())
	}
	want := map[string]string{"a": SourceHistory, "b": SourceDefault, "c": SourceHistory, "d": SourceHistory}
	for typ, src := range want {
		if got := r.Predict(typ, 0).Source; got != src {
			t.Errorf("Predict(%q).Source = %q, want %q", typ, got, src)
		}
	}
	r.Observe("e", time.Second) // evicts c
	if got := r.Predict("c", 0).Source; got != SourceDefault {
		t.Errorf("after adding e, Predict(c).Source = %q, want %q", got, SourceDefault)
	}
	if got := r.Predict("a", 0).Samples; got != 2 {
		t.Errorf("Predict(a).Samples = %d, want 2", got)
	}
}

func TestSecondsToDurationSaturates(t *testing.T) {
	tests := []struct {
		in   float64
		want time.Duration
	}{
		{1.5, 1500 * time.Millisecond},
		{math.Inf(1), math.MaxInt64},
		{1e300, math.MaxInt64},
		{math.Inf(-1), math.MinInt64},
		{math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := secondsToDuration(tt.in); got != tt.want {
			t.Errorf("secondsToDuration(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
