package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

// Default and limiting chart sizes, in pixels.
const (
	defaultWidth  = 900
	defaultHeight = 560
	minSide       = 120
	maxSide       = 8192
)

var (
	errNoSeries = errors.New("plot: chart has no series")
	errLength   = errors.New("plot: series has len(X) != len(Y)")
	errNoPoints = errors.New("plot: chart has no finite points to draw")
	errSize     = errors.New("plot: chart size out of range")
	errRange    = errors.New("plot: data range cannot be drawn")
	errNoRoom   = errors.New("plot: chart too small for its labels")
)

// Series is one line: points (X[i], Y[i]), drawn in order. Points with a
// NaN or infinite coordinate, or a non-positive one on a log axis, are
// skipped and break the line.
type Series struct {
	Name string
	X, Y []float64
}

// Chart is a line chart. Series are drawn in order, each in the next
// colour of a fixed palette of eight (repeating after the eighth), so a
// later series covers an earlier one where they cross.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool // log10 axes (non-positive values are skipped)
	Series                []Series
	Width, Height         int // pixels; 0 means 900x560
}

// PNG renders the chart. It returns an error, never panics, when the
// chart has no series, a series has len(X) != len(Y), no point of any
// series can be drawn, the size is negative or outside 120..8192 pixels
// per side, or the labels leave no room for the plot. The same chart
// always gives byte-identical output.
func (c Chart) PNG() ([]byte, error) {
	img, err := c.render()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("plot: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteFile renders the chart and writes it to path (creating the parent
// directory). It fails as PNG does, or when the file cannot be written.
func (c Chart) WriteFile(path string) error {
	b, err := c.PNG()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// size returns the chart's pixel size, with zeros replaced by defaults.
func (c Chart) size() (w, h int, err error) {
	w, h = c.Width, c.Height
	if w == 0 {
		w = defaultWidth
	}
	if h == 0 {
		h = defaultHeight
	}
	if w < minSide || h < minSide || w > maxSide || h > maxSide {
		return 0, 0, fmt.Errorf("%w: %dx%d, want %d..%d per side", errSize, c.Width, c.Height, minSide, maxSide)
	}
	return w, h, nil
}

// extent is the range of the transformed coordinates of the drawable
// points, on both axes.
type extent struct {
	xlo, xhi, ylo, yhi float64
}

// extent validates the series and returns the range of their drawable
// points in transformed (log10 where the axis is log) coordinates.
func (c Chart) extent() (extent, error) {
	if len(c.Series) == 0 {
		return extent{}, errNoSeries
	}
	e := extent{math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)}
	n := 0
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return extent{}, fmt.Errorf("%w: series %d (%q) has %d X and %d Y", errLength, i, s.Name, len(s.X), len(s.Y))
		}
		for j := range s.X {
			x, okx := transform(c.LogX, s.X[j])
			y, oky := transform(c.LogY, s.Y[j])
			if !okx || !oky {
				continue
			}
			n++
			e.xlo, e.xhi = min(e.xlo, x), max(e.xhi, x)
			e.ylo, e.yhi = min(e.ylo, y), max(e.yhi, y)
		}
	}
	if n == 0 {
		return extent{}, errNoPoints
	}
	return e, nil
}

// transform maps a data value to axis coordinates: itself on a linear
// axis, its log10 on a log axis. It reports false for a value that
// cannot be drawn.
func transform(log bool, v float64) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if !log {
		return v, true
	}
	if v <= 0 {
		return 0, false
	}
	return math.Log10(v), true
}
