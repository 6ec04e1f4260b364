package predict

import "time"

// MAPE accumulates the mean absolute percentage error of predictions
// against actual values. The zero value is an empty tracker ready to use.
type MAPE struct {
	sum float64
	n   int
}

// Add records one prediction and the actual value it predicted. Pairs
// whose actual value is not positive are ignored, since their percentage
// error is undefined.
func (m *MAPE) Add(predicted, actual time.Duration) {
	if actual <= 0 {
		return
	}
	diff := float64(predicted) - float64(actual)
	if diff < 0 {
		diff = -diff
	}
	m.sum += diff / float64(actual)
	m.n++
}

// Value returns the mean absolute percentage error as a fraction (0.2
// means 20%), or zero when nothing has been added.
func (m *MAPE) Value() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

// N returns the number of pairs recorded.
func (m *MAPE) N() int { return m.n }
