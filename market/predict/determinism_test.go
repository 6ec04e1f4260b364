package predict

import (
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// runtimeRun feeds a seeded sequence into a fresh Runtime and returns every
// prediction made along the way and the final snapshot.
func runtimeRun(seed int64) ([]Prediction, []TypeStats) {
	rng := rand.New(rand.NewSource(seed))
	r := NewRuntime(RuntimeConfig{MaxTypes: 4})
	types := []string{"a", "b", "c", "d", "e", "f"}
	var preds []Prediction
	for range 500 {
		typ := types[rng.Intn(len(types))]
		estimate := time.Duration(rng.Intn(3)) * time.Minute
		preds = append(preds, r.Predict(typ, estimate))
		r.Observe(typ, logNormal(0.4).sample(rng, time.Duration(1+rng.Intn(100))*time.Second))
	}
	return preds, r.Snapshot()
}

// loadRun feeds a seeded sequence into a fresh Load and returns its
// forecasts, levels and trends.
func loadRun(seed int64) []float64 {
	rng := rand.New(rand.NewSource(seed))
	l := NewLoad(0, 0)
	var out []float64
	sec := 0.0
	for range 300 {
		sec += 1 + 9*rng.Float64()
		l.Observe(at(sec), rng.Float64())
		out = append(out, l.Forecast(at(sec+30)), l.Level(), l.Trend())
	}
	return out
}

func TestDeterminism(t *testing.T) {
	p1, s1 := runtimeRun(99)
	p2, s2 := runtimeRun(99)
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(s1, s2) {
		t.Error("Runtime: the same inputs gave different outputs")
	}
	if len(s1) != 4 {
		t.Errorf("Runtime snapshot holds %d types, want MaxTypes = 4", len(s1))
	}
	if !reflect.DeepEqual(loadRun(99), loadRun(99)) {
		t.Error("Load: the same inputs gave different outputs")
	}
}
