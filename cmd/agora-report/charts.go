package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one line of a chart: points (X[i], Y[i]) in order.
type series struct {
	Name string
	X, Y []float64
}

// chart is a line chart of named series, drawn with gonum/plot.
type chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool // log10 axes
	Series                []series
}

// chartWidth and chartHeight size every plot: 900×560 pixels at the
// 96 dpi gonum/plot renders PNG at.
const (
	chartWidth  = 9.375 * vg.Inch
	chartHeight = 5.833 * vg.Inch
)

// maxCDFPoints bounds the points of a CDF series.
const maxCDFPoints = 400

// cdf returns the empirical CDF of values: X the sorted finite values,
// Y = i/n for the i-th smallest (from 1), thinned to at most 400 points
// that keep the smallest and the largest values and evenly spaced ranks
// between. NaN and infinite values are dropped and do not count in n.
func cdf(name string, values []float64) series {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	slices.Sort(v)
	n := len(v)
	k := min(n, maxCDFPoints)
	s := series{Name: name, X: make([]float64, k), Y: make([]float64, k)}
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

// drawable reports whether a point can be drawn on the chart's axes:
// finite, and positive on a log axis.
func (c chart) drawable(x, y float64) bool {
	ok := func(v float64, log bool) bool {
		return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
	}
	return ok(x, c.LogX) && ok(y, c.LogY)
}

// writePNG renders the chart to path (creating its directory). Points
// that cannot be drawn are left out; a chart without any point to draw is
// an error.
func (c chart) writePNG(path string) error {
	if len(c.Series) == 0 {
		return errors.New("chart has no series")
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.XLabel, c.YLabel
	if c.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if c.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
	points := 0
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("series %q has %d X and %d Y values", s.Name, len(s.X), len(s.Y))
		}
		var xys plotter.XYs
		for k := range s.X {
			if c.drawable(s.X[k], s.Y[k]) {
				xys = append(xys, plotter.XY{X: s.X[k], Y: s.Y[k]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		points += len(xys)
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("series %q: %w", s.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	if points == 0 {
		return errors.New("chart has no finite points to draw")
	}
	// One value on an axis (a curve of one point) would be padded by ±1,
	// below zero on a log axis.
	widen(&p.X, c.LogX)
	widen(&p.Y, c.LogY)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(chartWidth, chartHeight, path)
}

// widen gives an axis whose data span a single value a range around it.
func widen(a *plot.Axis, log bool) {
	if a.Min < a.Max {
		return
	}
	if log {
		a.Min, a.Max = a.Min/2, a.Max*2
		return
	}
	a.Min, a.Max = a.Min-1, a.Max+1
}
