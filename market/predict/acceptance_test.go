package predict

import (
	"math/rand"
	"testing"
	"time"
)

// TestAcceptanceNoisyRuntimes is the acceptance test: after ten
// observed runs of a job type, predicting each further run before observing
// it has a mean absolute percentage error under 20%, far below that of a
// user estimate three times the truth.
func TestAcceptanceNoisyRuntimes(t *testing.T) {
	const (
		warmup = 10
		draws  = 200
	)
	typicals := []time.Duration{30 * time.Second, 5 * time.Minute, 2 * time.Hour}
	noises := []noise{logNormal(0.1), logNormal(0.15), uniform(0.15)}
	for i, nz := range noises {
		for j, typical := range typicals {
			t.Run(nz.name+"/"+typical.String(), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(100*i + j + 1)))
				r := NewRuntime(RuntimeConfig{})
				jobType := "job-" + typical.String()
				estimate := 3 * typical
				for range warmup {
					r.Observe(jobType, nz.sample(rng, typical))
				}
				var model, user MAPE
				for range draws {
					p := r.Predict(jobType, estimate)
					if p.Source != SourceHistory {
						t.Fatalf("Source = %q with history and an estimate, want %q", p.Source, SourceHistory)
					}
					actual := nz.sample(rng, typical)
					model.Add(p.Runtime, actual)
					user.Add(estimate, actual)
					r.Observe(jobType, actual)
				}
				t.Logf("prediction_mape=%.4f user_estimate_mape=%.4f over %d runs", model.Value(), user.Value(), model.N())
				if model.N() != draws {
					t.Fatalf("MAPE counted %d runs, want %d", model.N(), draws)
				}
				if model.Value() >= 0.20 {
					t.Errorf("prediction MAPE = %.3f, want < 0.20", model.Value())
				}
				if user.Value() < 1.5 {
					t.Errorf("user-estimate MAPE = %.3f, want >= 1.5 for a 3x estimate", user.Value())
				}
				if model.Value()*5 > user.Value() {
					t.Errorf("prediction MAPE %.3f is not at least 5x better than user-estimate MAPE %.3f", model.Value(), user.Value())
				}
			})
		}
	}
}

// TestAdaptsToShift checks that when a job type's runtime doubles, the
// prediction error is back under 20% within about ten runs.
func TestAdaptsToShift(t *testing.T) {
	for _, nz := range []noise{logNormal(0.15), uniform(0.15)} {
		t.Run(nz.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(7))
			r := NewRuntime(RuntimeConfig{})
			before, after := 5*time.Minute, 10*time.Minute
			for range 50 {
				r.Observe("render", nz.sample(rng, before))
			}
			first := r.Predict("render", 0).Runtime
			if err := relErr(first, after); err < 0.35 {
				t.Fatalf("error just after the shift = %.3f; the shift should hurt (want >= 0.35)", err)
			}
			for range 10 {
				r.Observe("render", nz.sample(rng, after))
			}
			var m MAPE
			for range 50 {
				actual := nz.sample(rng, after)
				m.Add(r.Predict("render", 0).Runtime, actual)
				r.Observe("render", actual)
			}
			t.Logf("MAPE after the shift and 10 runs: %.4f", m.Value())
			if m.Value() >= 0.20 {
				t.Errorf("MAPE after the shift and 10 runs = %.3f, want < 0.20", m.Value())
			}
		})
	}
}

// relErr returns |predicted − actual| / actual.
func relErr(predicted, actual time.Duration) float64 {
	var m MAPE
	m.Add(predicted, actual)
	return m.Value()
}
