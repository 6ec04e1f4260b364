package plot

import (
	"image"
	"image/color"
)

// Palette indices of the canvas.
const (
	idxWhite uint8 = iota
	idxBlack
	idxGrid
	idxSeries // first series colour
)

// seriesColors is the fixed series palette (Tableau 10 without grey and
// olive): distinct hues that survive greyscale printing reasonably.
var seriesColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

// palette is the canvas palette: white, black, grid grey, then the series.
var palette = func() color.Palette {
	p := color.Palette{color.White, color.Black, color.RGBA{0xdd, 0xdd, 0xdd, 0xff}}
	for _, c := range seriesColors {
		p = append(p, c)
	}
	return p
}()

// seriesIndex returns the palette index of series i's colour.
func seriesIndex(i int) uint8 { return idxSeries + uint8(i%len(seriesColors)) }

// canvas is a paletted raster whose drawing calls clip to its bounds.
type canvas struct{ img *image.Paletted }

// newCanvas returns a white w x h canvas.
func newCanvas(w, h int) canvas {
	return canvas{image.NewPaletted(image.Rect(0, 0, w, h), palette)}
}

func (c canvas) set(x, y int, idx uint8) {
	if image.Pt(x, y).In(c.img.Rect) {
		c.img.Pix[c.img.PixOffset(x, y)] = idx
	}
}

// fill paints the rectangle r, clipped to the canvas.
func (c canvas) fill(r image.Rectangle, idx uint8) {
	r = r.Intersect(c.img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c.img.Pix[c.img.PixOffset(x, y)] = idx
		}
	}
}

// line draws a 2 px thick line from (x0, y0) to (x1, y1) by Bresenham's
// algorithm with a 2x2 brush; a zero-length line is a 2x2 dot.
func (c canvas) line(x0, y0, x1, y1 int, idx uint8) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.fill(image.Rect(x0, y0, x0+2, y0+2), idx)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// text draws s with its top-left corner at (x, y), each font pixel a
// scale x scale square.
func (c canvas) text(x, y int, s string, scale int, idx uint8) {
	for _, r := range s {
		g := glyph(r)
		for row, bits := range g {
			for col := range glyphW {
				if bits&(1<<(glyphW-1-col)) != 0 {
					c.fill(image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), idx)
				}
			}
		}
		x += advance * scale
	}
}

// textUp draws s turned a quarter left, reading upwards, with the
// bottom-left corner of the run (the first glyph's left edge) at (x, y).
func (c canvas) textUp(x, y int, s string, scale int, idx uint8) {
	for _, r := range s {
		g := glyph(r)
		for row, bits := range g {
			for col := range glyphW {
				if bits&(1<<(glyphW-1-col)) != 0 {
					px, py := x+row*scale, y-(col+1)*scale
					c.fill(image.Rect(px, py, px+scale, py+scale), idx)
				}
			}
		}
		y -= advance * scale
	}
}

// textWidth is the length in pixels of s drawn at scale.
func textWidth(s string, scale int) int {
	n := 0
	for range s {
		n++
	}
	if n == 0 {
		return 0
	}
	return (n*advance - 1) * scale
}
