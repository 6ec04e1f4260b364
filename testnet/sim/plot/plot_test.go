package plot

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// line returns a series of n points on y = a*x + b, x from 1 to n.
func line(name string, n int, a, b float64) Series {
	s := Series{Name: name}
	for i := 1; i <= n; i++ {
		s.X = append(s.X, float64(i))
		s.Y = append(s.Y, a*float64(i)+b)
	}
	return s
}

// decode renders c and decodes the PNG, failing the test on error.
func decode(t *testing.T, c Chart) image.Image {
	t.Helper()
	b, err := c.PNG()
	if err != nil {
		t.Fatalf("PNG: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return img
}

// count returns how many pixels of img have colour want.
func count(img image.Image, want color.Color) int {
	wr, wg, wb, wa := want.RGBA()
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if r == wr && g == wg && bl == wb && a == wa {
				n++
			}
		}
	}
	return n
}

func TestPNG(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cdfs := []Series{
		CDF("fifo", []float64{1, 2, 3, 5, 8, 13, 21}),
		CDF("market", []float64{0.5, 1, 1.5, 2, 40}),
	}
	var many []Series
	for i := range 8 {
		many = append(many, line("s"+string(rune('a'+i)), 20, float64(i+1), 0))
	}
	tests := []struct {
		name string
		c    Chart
		w, h int
	}{
		{"default size", Chart{Title: "Makespan", XLabel: "jobs", YLabel: "seconds",
			Series: []Series{line("fifo", 10, 2, 1), line("market", 10, 1, 3)}}, 900, 560},
		{"custom size", Chart{Series: []Series{line("one", 5, 1, 0)}, Width: 320, Height: 200}, 320, 200},
		{"width only", Chart{Series: []Series{line("one", 5, 1, 0)}, Width: 640}, 640, 560},
		{"log axes", Chart{Title: "Wait CDF", XLabel: "wait (s)", YLabel: "fraction", LogX: true,
			Series: cdfs}, 900, 560},
		{"log y over decades", Chart{LogY: true, Series: []Series{
			{Name: "exp", X: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
				Y: []float64{1, 10, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12}},
			{Name: "flat", X: []float64{0, 12}, Y: []float64{1e3, 1e3}},
		}}, 900, 560},
		{"skips NaN, Inf and non-positive on log", Chart{LogX: true, Series: []Series{
			{Name: "gappy", X: []float64{nan, 1, 2, -1, 3, inf, 4, 0}, Y: []float64{1, 1, 2, 3, 3, 4, 4, 5}},
			{Name: "lone", X: []float64{5, 6}, Y: []float64{nan, 2}},
		}}, 900, 560},
		{"constant series", Chart{Series: []Series{{Name: "c", X: []float64{3, 3}, Y: []float64{7, 7}}}}, 900, 560},
		{"eight series", Chart{Title: "all colours", Series: many}, 900, 560},
		{"large magnitudes", Chart{Series: []Series{{Name: "big",
			X: []float64{1e9, 1e9 + 10}, Y: []float64{-3e7, 4e7}}}}, 900, 560},
		{"non-ASCII names", Chart{Title: "µs — latency", Series: []Series{line("naïve", 3, 1, 0)}}, 900, 560},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := decode(t, tt.c)
			if got := img.Bounds().Size(); got != image.Pt(tt.w, tt.h) {
				t.Fatalf("size = %v, want %dx%d", got, tt.w, tt.h)
			}
			// Beyond its legend swatch, each series colours at least a 2x2 dot.
			scale := 1
			if tt.w >= 600 && tt.h >= 360 {
				scale = 2
			}
			swatch := swatchLen * scale * 2 * scale
			for i, s := range tt.c.Series {
				if n := count(img, seriesColors[i%len(seriesColors)]); n < swatch+4 {
					t.Errorf("series %d (%s): %d pixels of its colour, want >= %d", i, s.Name, n, swatch+4)
				}
			}
			if count(img, color.Black) == 0 {
				t.Error("no black pixels: axes and text missing")
			}
		})
	}
}

func TestPNGErrors(t *testing.T) {
	nan := math.NaN()
	ok := []Series{line("ok", 3, 1, 0)}
	tests := []struct {
		name string
		c    Chart
		want error
	}{
		{"no series", Chart{}, errNoSeries},
		{"length mismatch", Chart{Series: []Series{line("ok", 3, 1, 0), {Name: "bad", X: []float64{1, 2}, Y: []float64{1}}}}, errLength},
		{"empty series only", Chart{Series: []Series{{Name: "empty"}}}, errNoPoints},
		{"all NaN", Chart{Series: []Series{{X: []float64{nan, 1}, Y: []float64{1, nan}}}}, errNoPoints},
		{"nothing positive on log x", Chart{LogX: true, Series: []Series{{X: []float64{0, -1}, Y: []float64{1, 2}}}}, errNoPoints},
		{"empty CDF", Chart{Series: []Series{CDF("none", []float64{nan})}}, errNoPoints},
		{"negative width", Chart{Series: ok, Width: -1}, errSize},
		{"too small", Chart{Series: ok, Width: 50, Height: 50}, errSize},
		{"too large", Chart{Series: ok, Width: maxSide + 1}, errSize},
		{"range overflows", Chart{Series: []Series{{X: []float64{-math.MaxFloat64, math.MaxFloat64}, Y: []float64{0, 1}}}}, errRange},
		{"range too narrow for magnitude", Chart{Series: []Series{{X: []float64{1e20, math.Nextafter(1e20, 2e20)}, Y: []float64{0, 1}}}}, errRange},
		{"labels leave no room", Chart{Title: "t", XLabel: "x", YLabel: "y", Width: 120, Height: 120,
			Series: []Series{line("a", 3, 1, 0), line("b", 3, 1, 0), line("c", 3, 1, 0), line("d", 3, 1, 0), line("e", 3, 1, 0)}}, errNoRoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.c.PNG()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if b != nil {
				t.Errorf("got %d bytes with an error", len(b))
			}
		})
	}
}

func TestPNGDeterministic(t *testing.T) {
	c := Chart{Title: "CDF", XLabel: "x", YLabel: "p", LogX: true, Series: []Series{
		CDF("a", []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}),
		line("b", 7, 0.1, 0),
	}}
	first, err := c.PNG()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := c.PNG()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("the same chart gave different PNG bytes")
		}
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "chart.png")
	c := Chart{Series: []Series{line("one", 4, 1, 0)}, Width: 300, Height: 200}
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := c.PNG()
	if !bytes.Equal(got, want) {
		t.Error("file differs from PNG()")
	}
	if err := (Chart{}).WriteFile(path); !errors.Is(err, errNoSeries) {
		t.Errorf("WriteFile of an empty chart: err = %v, want %v", err, errNoSeries)
	}
}

func TestCDF(t *testing.T) {
	many := make([]float64, 10_000)
	for i := range many {
		many[i] = float64((i * 7919) % 10_007) // a scrambled permutation-ish sample
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
			s := CDF("x", tt.values)
			same := slices.EqualFunc(before, tt.values, func(a, b float64) bool {
				return math.Float64bits(a) == math.Float64bits(b)
			})
			if !same {
				t.Error("CDF modified its input")
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
			finite := slices.DeleteFunc(slices.Clone(tt.values), func(v float64) bool {
				return math.IsNaN(v) || math.IsInf(v, 0)
			})
			if s.X[0] != slices.Min(finite) || s.X[len(s.X)-1] != slices.Max(finite) {
				t.Errorf("X spans [%g, %g], want the sample's min and max", s.X[0], s.X[len(s.X)-1])
			}
		})
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		name   string
		log    bool
		lo, hi float64
		want   []string
	}{
		{"unit", false, 0.1, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{"hundreds", false, 3, 97, []string{"0", "20", "40", "60", "80", "100"}},
		{"negative", false, -7, 3, []string{"-8", "-6", "-4", "-2", "0", "2", "4"}},
		{"constant", false, 5, 5, []string{"4.4", "4.6", "4.8", "5.0", "5.2", "5.4", "5.6"}},
		{"millions", false, 0, 4e6, []string{"0", "1e6", "2e6", "3e6", "4e6"}},
		{"tiny", false, 0, 4e-6, []string{"0", "1e-6", "2e-6", "3e-6", "4e-6"}},
		{"log decades", true, -0.3, 2.5, []string{"0.1", "1", "10", "100", "1000"}},
		{"log one value", true, 0, 0, []string{"0.1", "1", "10"}},
		{"log one decade", true, -0.9, -0.2, []string{"0.1", "0.2", "0.5", "1"}},
		{"log high decade", true, 6.1, 6.5, []string{"1e6", "2e6", "5e6", "1e7"}},
		{"log wide", true, -2, 14, []string{"0.01", "1", "100", "10000", "1e6", "1e8", "1e10", "1e12", "1e14"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := newAxis(tt.log, tt.lo, tt.hi)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.labels, tt.want) {
				t.Errorf("labels = %q, want %q", a.labels, tt.want)
			}
			if a.lo > tt.lo || a.hi < tt.hi {
				t.Errorf("domain [%g, %g] does not cover [%g, %g]", a.lo, a.hi, tt.lo, tt.hi)
			}
		})
	}
}
