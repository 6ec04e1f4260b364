package predict

import (
	"math"
	"testing"
	"time"
)

func TestMAPE(t *testing.T) {
	type pair struct{ predicted, actual time.Duration }
	tests := []struct {
		name  string
		pairs []pair
		want  float64
		n     int
	}{
		{"empty", nil, 0, 0},
		{"exact", []pair{{time.Second, time.Second}}, 0, 1},
		{"over by half", []pair{{15 * time.Second, 10 * time.Second}}, 0.5, 1},
		{"under by half", []pair{{5 * time.Second, 10 * time.Second}}, 0.5, 1},
		{"three times", []pair{{3 * time.Minute, time.Minute}}, 2, 1},
		{"mean of several", []pair{{11, 10}, {8, 10}, {10, 10}, {30, 10}}, (0.1 + 0.2 + 0 + 2) / 4, 4},
		{"zero prediction", []pair{{0, time.Second}}, 1, 1},
		{"non-positive actuals ignored", []pair{{time.Second, 0}, {time.Second, -time.Second}, {2 * time.Second, time.Second}}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m MAPE
			for _, p := range tt.pairs {
				m.Add(p.predicted, p.actual)
			}
			if math.Abs(m.Value()-tt.want) > 1e-12 {
				t.Errorf("Value() = %v, want %v", m.Value(), tt.want)
			}
			if m.N() != tt.n {
				t.Errorf("N() = %d, want %d", m.N(), tt.n)
			}
		})
	}
}
