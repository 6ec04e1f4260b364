package plot

import (
	"math"
	"slices"
)

// maxCDFPoints bounds the points of a CDF series.
const maxCDFPoints = 400

// CDF returns the empirical CDF of values as a Series (X sorted values,
// Y = i/n), thinned to at most 400 points. The i-th smallest of the n finite values (i from 1) has Y = i/n; NaN
// and infinite values are dropped and do not count in n. Thinning keeps
// the smallest and largest values and evenly spaced ranks between, so
// the series still starts at 1/n and ends at 1. No finite values give
// an empty series. values is not modified.
func CDF(name string, values []float64) Series {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	slices.Sort(v)
	n := len(v)
	k := min(n, maxCDFPoints)
	s := Series{Name: name, X: make([]float64, k), Y: make([]float64, k)}
	for j := range k {
		i := j
		if n > maxCDFPoints {
			i = j * (n - 1) / (maxCDFPoints - 1)
		}
		s.X[j] = v[i]
		s.Y[j] = float64(i+1) / float64(n)
	}
	return s
}
