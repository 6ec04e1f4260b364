package plot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxLogTicks bounds the labelled powers of ten on a log axis; wider
// ranges label every second, third… decade.
const maxLogTicks = 8

// axis is one scale in transformed coordinates (log10 on a log axis):
// the domain [lo, hi] mapped onto the plot area, and its labelled ticks.
type axis struct {
	lo, hi float64
	ticks  []float64
	labels []string
	minor  []float64 // unlabelled ticks: 2..9 times each power of ten on a log axis
}

// frac returns where t lies on the axis, 0 at lo and 1 at hi.
func (a axis) frac(t float64) float64 { return (t - a.lo) / (a.hi - a.lo) }

// newAxis returns an axis covering the transformed data range [lo, hi],
// widened to whole ticks: about five at 1, 2 or 5 times a power of ten
// on a linear axis, and at powers of ten on a log axis (every second or
// further one past maxLogTicks; also at 2 and 5 when it spans a single
// decade).
func newAxis(log bool, lo, hi float64) (axis, error) {
	if log {
		return logAxis(lo, hi), nil
	}
	return linearAxis(lo, hi)
}

func linearAxis(lo, hi float64) (axis, error) {
	if lo == hi {
		d := math.Abs(lo) / 10
		if d == 0 {
			d = 1
		}
		lo, hi = lo-d, hi+d
	}
	step := niceStep((hi - lo) / 4)
	if math.IsInf(hi-lo, 0) || math.IsInf(step, 0) || step == 0 {
		return axis{}, fmt.Errorf("%w: [%g, %g]", errRange, lo, hi)
	}
	const eps = 1e-9
	kmin := math.Floor(lo/step + eps)
	kmax := math.Ceil(hi/step - eps)
	// Tick indices beyond 2^50 lose their unit steps to rounding: the
	// range is too narrow for its magnitude.
	const maxIndex = 1 << 50
	if math.Abs(kmin) > maxIndex || math.Abs(kmax) > maxIndex || kmax-kmin > 100 {
		return axis{}, fmt.Errorf("%w: [%g, %g]", errRange, lo, hi)
	}
	a := axis{lo: kmin * step, hi: kmax * step}
	if a.lo >= a.hi || math.IsInf(a.lo, 0) || math.IsInf(a.hi, 0) {
		return axis{}, fmt.Errorf("%w: [%g, %g]", errRange, lo, hi)
	}
	for i := 0; i <= int(kmax-kmin); i++ {
		t := (kmin + float64(i)) * step
		a.ticks = append(a.ticks, t)
		a.labels = append(a.labels, linearLabel(t, step, max(math.Abs(a.lo), math.Abs(a.hi))))
	}
	return a, nil
}

// niceStep rounds raw to the nearest of 1, 2, 5 or 10 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return raw
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f < 1.5:
		return p
	case f < 3:
		return 2 * p
	case f < 7:
		return 5 * p
	default:
		return 10 * p
	}
}

// linearLabel formats tick t of an axis with the given step and largest
// magnitude, with just enough digits to tell neighbouring ticks apart.
func linearLabel(t, step, mag float64) string {
	if math.Abs(t) < step/2 {
		t = 0 // not -0, nor a rounding residue
	}
	se := int(math.Floor(math.Log10(step) + 1e-9))
	me := int(math.Floor(math.Log10(mag) + 1e-9))
	if me >= 6 || se <= -5 {
		if t == 0 {
			return "0"
		}
		// Scientific, with the mantissa digits down to the step's.
		digits := max(0, int(math.Floor(math.Log10(math.Abs(t))+1e-9))-se)
		return compactExp(strconv.FormatFloat(t, 'e', digits, 64))
	}
	return strconv.FormatFloat(t, 'f', max(0, -se), 64)
}

// compactExp shortens Go's exponent form: "1.5e+06" to "1.5e6".
func compactExp(s string) string {
	m, e, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	sign := ""
	if strings.HasPrefix(e, "-") {
		sign = "-"
	}
	e = strings.TrimLeft(e, "+-0")
	if e == "" {
		return m
	}
	return m + "e" + sign + e
}

func logAxis(lo, hi float64) axis {
	elo, ehi := math.Floor(lo), math.Ceil(hi)
	if elo == ehi {
		elo, ehi = elo-1, ehi+1
	}
	step := math.Ceil((ehi - elo) / maxLogTicks)
	ehi = elo + step*math.Ceil((ehi-elo)/step)
	a := axis{lo: elo, hi: ehi}
	for e := elo; e <= ehi; e += step {
		a.ticks = append(a.ticks, e)
		a.labels = append(a.labels, logLabel(1, int(e)))
		if step > 1 || e == ehi {
			continue
		}
		for m := 2; m <= 9; m++ {
			t := e + math.Log10(float64(m))
			if ehi-elo == 1 && (m == 2 || m == 5) {
				// A single decade also labels 2 and 5, for five ticks.
				a.ticks = append(a.ticks, t)
				a.labels = append(a.labels, logLabel(m, int(e)))
				continue
			}
			a.minor = append(a.minor, t)
		}
	}
	return a
}

// logLabel formats m times 10^e: plainly from 0.001 to 90000, else as
// "2e5".
func logLabel(m, e int) string {
	if e >= -3 && e <= 4 {
		return strconv.FormatFloat(float64(m)*math.Pow10(e), 'f', max(0, -e), 64)
	}
	return strconv.Itoa(m) + "e" + strconv.Itoa(e)
}
