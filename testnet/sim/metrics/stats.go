package metrics

import (
	"math"
	"slices"
	"time"
)

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs:
// the smallest value with at least p % of the values at or below it.
// It is 0 for no values.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Mean is the arithmetic mean of xs, 0 for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Jain is Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all are
// equal, 1/n when one value holds everything. It is 0 for no values and
// 1 when all are zero.
func Jain(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum, sq := 0.0, 0.0
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// MAPE is the mean absolute percentage error of the guesses against the
// actual values, as a fraction (0.25 is 25 %): the mean of |g − a| / a
// over the pairs where both are above zero. It is 0 for no such pairs.
func MAPE(guess, actual []time.Duration) float64 {
	sum, n := 0.0, 0
	for i := range min(len(guess), len(actual)) {
		g, a := guess[i], actual[i]
		if g <= 0 || a <= 0 {
			continue
		}
		sum += math.Abs(float64(g-a)) / float64(a)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
