package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestChartPNG: a chart renders to a PNG of the report's plot size, on
// linear and log axes, with points a log axis cannot show left out; a
// chart with nothing to draw is an error, not a panic.
func TestChartPNG(t *testing.T) {
	dir := t.TempDir()
	line := series{Name: "a", X: []float64{0, 1, 10, 100, math.NaN()}, Y: []float64{1, 2, 3, 4, 5}}
	for _, c := range []chart{
		{Title: "linear", XLabel: "x", YLabel: "y", Series: []series{line, cdf("b", []float64{3, 1, 2})}},
		{Title: "log", LogX: true, LogY: true, Series: []series{line}},
		// One point (a wall-time curve of one node count) below 1.
		{Title: "one-point-log", LogX: true, LogY: true, Series: []series{{Name: "p", X: []float64{100}, Y: []float64{0.5}}}},
		{Title: "one-point", Series: []series{{Name: "p", X: []float64{0}, Y: []float64{0}}}},
	} {
		path := filepath.Join(dir, "sub", c.Title+".png")
		if err := c.writePNG(path); err != nil {
			t.Fatalf("%s: %v", c.Title, err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", c.Title, err)
		}
		if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 560 {
			t.Fatalf("%s: %dx%d pixels, want 900x560", c.Title, b.Dx(), b.Dy())
		}
	}
	for _, bad := range []struct {
		name string
		c    chart
		want string
	}{
		{"no series", chart{}, "no series"},
		{"lengths differ", chart{Series: []series{{Name: "x", X: []float64{1}, Y: nil}}}, "1 X and 0 Y"},
		{"nothing drawable", chart{LogY: true, Series: []series{{Name: "x", X: []float64{1, 2}, Y: []float64{0, -1}}}}, "no finite points"},
	} {
		if err := bad.c.writePNG(filepath.Join(dir, "bad.png")); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want %q", bad.name, err, bad.want)
		}
	}
}

func TestCDF(t *testing.T) {
	many := make([]float64, 10_000)
	for i := range many {
		many[i] = float64((i * 7919) % 10_007) // a scrambled sample
	}
	tests := []struct {
		name   string
		values []float64
		n      int // finite values
		points int
	}{
		{"empty", nil, 0, 0},
		{"only NaN and Inf", []float64{math.NaN(), math.Inf(-1)}, 0, 0},
		{"one", []float64{5}, 1, 1},
		{"unsorted with NaN", []float64{3, math.NaN(), 1, 2, 2, math.Inf(1)}, 4, 4},
		{"exactly the limit", many[:maxCDFPoints], maxCDFPoints, maxCDFPoints},
		{"one over the limit", many[:maxCDFPoints+1], maxCDFPoints + 1, maxCDFPoints},
		{"thinned", many, len(many), maxCDFPoints},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.values)
			s := cdf("x", tt.values)
			if !slices.EqualFunc(before, tt.values, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
				t.Error("cdf modified its input")
			}
			if s.Name != "x" || len(s.X) != tt.points || len(s.Y) != tt.points {
				t.Fatalf("name %q, %d X, %d Y; want x, %d points", s.Name, len(s.X), len(s.Y), tt.points)
			}
			if tt.points == 0 {
				return
			}
			if !slices.IsSorted(s.X) {
				t.Errorf("X not sorted: %v", s.X)
			}
			for i := 1; i < len(s.Y); i++ {
				if s.Y[i] <= s.Y[i-1] {
					t.Fatalf("Y[%d] = %g after %g, want increasing", i, s.Y[i], s.Y[i-1])
				}
			}
			if first, want := s.Y[0], 1/float64(tt.n); first != want {
				t.Errorf("first Y = %g, want %g", first, want)
			}
			if last := s.Y[len(s.Y)-1]; last != 1 {
				t.Errorf("last Y = %g, want 1", last)
			}
			finite := slices.DeleteFunc(slices.Clone(tt.values), func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
			if s.X[0] != slices.Min(finite) || s.X[len(s.X)-1] != slices.Max(finite) {
				t.Errorf("X spans [%g, %g], want the sample's min and max", s.X[0], s.X[len(s.X)-1])
			}
		})
	}
}
