package plot

import (
	"image"
	"math"
)

// layout places the chart's parts, in pixels. The plot area spans
// [x0, x1] x [y0, y1], y growing downwards.
type layout struct {
	w, h           int
	s              int // scale of labels, ticks and legend text
	titleScale     int
	x0, x1, y0, y1 int
	pad, tick, gap int
	legend         []legendItem
	legendY        int // top of the first legend row
}

// legendItem is one legend entry: a swatch of its series' colour at
// (x, y), then its name.
type legendItem struct {
	x, y int
	idx  uint8
	name string
}

// Legend swatch length and space between entries, at text scale 1.
const (
	swatchLen  = 12
	legendSkip = 8
)

// render validates the chart and draws it.
func (c Chart) render() (*image.Paletted, error) {
	w, h, err := c.size()
	if err != nil {
		return nil, err
	}
	e, err := c.extent()
	if err != nil {
		return nil, err
	}
	xa, err := newAxis(c.LogX, e.xlo, e.xhi)
	if err != nil {
		return nil, err
	}
	ya, err := newAxis(c.LogY, e.ylo, e.yhi)
	if err != nil {
		return nil, err
	}
	l, err := c.layout(w, h, xa, ya)
	if err != nil {
		return nil, err
	}
	cv := newCanvas(w, h)
	l.drawAxes(cv, xa, ya)
	for i, s := range c.Series {
		l.drawSeries(cv, c, s, xa, ya, seriesIndex(i))
	}
	l.drawText(cv, c, xa, ya)
	return cv.img, nil
}

func (c Chart) layout(w, h int, xa, ya axis) (layout, error) {
	l := layout{w: w, h: h, s: 1}
	if w >= 600 && h >= 360 {
		l.s = 2
	}
	s := l.s
	l.pad, l.tick, l.gap = 6*s, 3*s, 3*s
	th := glyphH * s // text height

	// The title shrinks to fit the width.
	l.titleScale = s + 1
	for l.titleScale > 1 && textWidth(c.Title, l.titleScale) > w-2*l.pad {
		l.titleScale--
	}
	l.y0 = l.pad + th/2
	if c.Title != "" {
		l.y0 += glyphH*l.titleScale + l.pad
	}

	l.x0 = l.pad + widest(ya.labels, s) + l.gap + l.tick
	if c.YLabel != "" {
		l.x0 += th + l.pad
	}
	l.x1 = w - 1 - max(l.pad, widest(xa.labels, s)/2+l.pad)

	// The legend flows in rows under the x label, within the plot's width.
	rowH := th + l.gap
	x, rows := l.x0, 1
	for i, sr := range c.Series {
		iw := (swatchLen+advance)*s + textWidth(sr.Name, s)
		if x > l.x0 && x+iw > l.x1 {
			x, rows = l.x0, rows+1
		}
		l.legend = append(l.legend, legendItem{x: x, y: (rows - 1) * rowH, idx: seriesIndex(i), name: sr.Name})
		x += iw + legendSkip*s
	}
	l.legendY = h - l.pad - rows*rowH + l.gap
	for i := range l.legend {
		l.legend[i].y += l.legendY
	}
	l.y1 = l.legendY - l.pad - l.tick - l.gap - th
	if c.XLabel != "" {
		l.y1 -= th + l.pad
	}
	if l.x1-l.x0 < 40 || l.y1-l.y0 < 40 {
		return layout{}, errNoRoom
	}
	return l, nil
}

// widest returns the width of the longest of labels at scale s.
func widest(labels []string, s int) int {
	w := 0
	for _, t := range labels {
		w = max(w, textWidth(t, s))
	}
	return w
}

// px and py map transformed coordinates to pixels.
func (l layout) px(a axis, t float64) int {
	return l.x0 + int(math.Round(a.frac(t)*float64(l.x1-l.x0)))
}

func (l layout) py(a axis, t float64) int {
	return l.y1 - int(math.Round(a.frac(t)*float64(l.y1-l.y0)))
}

// drawAxes draws the grid at the labelled ticks, the frame and the tick
// marks, the unlabelled ones half as long.
func (l layout) drawAxes(cv canvas, xa, ya axis) {
	for _, t := range xa.minor {
		x := l.px(xa, t)
		cv.fill(image.Rect(x, l.y1, x+1, l.y1+l.tick/2+1), idxBlack)
	}
	for _, t := range ya.minor {
		y := l.py(ya, t)
		cv.fill(image.Rect(l.x0-l.tick/2, y, l.x0, y+1), idxBlack)
	}
	for _, t := range xa.ticks {
		x := l.px(xa, t)
		cv.fill(image.Rect(x, l.y0, x+1, l.y1), idxGrid)
		cv.fill(image.Rect(x, l.y1, x+1, l.y1+l.tick+1), idxBlack)
	}
	for _, t := range ya.ticks {
		y := l.py(ya, t)
		cv.fill(image.Rect(l.x0, y, l.x1, y+1), idxGrid)
		cv.fill(image.Rect(l.x0-l.tick, y, l.x0, y+1), idxBlack)
	}
	cv.fill(image.Rect(l.x0, l.y0, l.x1+1, l.y0+1), idxBlack)
	cv.fill(image.Rect(l.x0, l.y1, l.x1+1, l.y1+1), idxBlack)
	cv.fill(image.Rect(l.x0, l.y0, l.x0+1, l.y1+1), idxBlack)
	cv.fill(image.Rect(l.x1, l.y0, l.x1+1, l.y1+1), idxBlack)
}

// drawSeries draws s's drawable points joined in order; a point that
// cannot be drawn breaks the line.
func (l layout) drawSeries(cv canvas, c Chart, s Series, xa, ya axis, idx uint8) {
	var px, py int
	prev := false
	for i := range s.X {
		tx, okx := transform(c.LogX, s.X[i])
		ty, oky := transform(c.LogY, s.Y[i])
		if !okx || !oky {
			prev = false
			continue
		}
		x, y := l.px(xa, tx), l.py(ya, ty)
		if prev {
			cv.line(px, py, x, y, idx)
		} else {
			cv.line(x, y, x, y, idx)
		}
		px, py, prev = x, y, true
	}
}

// drawText draws the tick labels, the title, the axis labels and the
// legend.
func (l layout) drawText(cv canvas, c Chart, xa, ya axis) {
	s := l.s
	th := glyphH * s
	for i, t := range xa.ticks {
		lw := textWidth(xa.labels[i], s)
		cv.text(l.px(xa, t)-lw/2, l.y1+l.tick+l.gap, xa.labels[i], s, idxBlack)
	}
	for i, t := range ya.ticks {
		lw := textWidth(ya.labels[i], s)
		cv.text(l.x0-l.tick-l.gap-lw, l.py(ya, t)-th/2, ya.labels[i], s, idxBlack)
	}
	if c.Title != "" {
		cv.text((l.w-textWidth(c.Title, l.titleScale))/2, l.pad, c.Title, l.titleScale, idxBlack)
	}
	if c.XLabel != "" {
		x := (l.x0+l.x1)/2 - textWidth(c.XLabel, s)/2
		cv.text(x, l.y1+l.tick+l.gap+th+l.pad, c.XLabel, s, idxBlack)
	}
	if c.YLabel != "" {
		y := (l.y0+l.y1)/2 + textWidth(c.YLabel, s)/2
		cv.textUp(l.pad, y, c.YLabel, s, idxBlack)
	}
	for _, it := range l.legend {
		mid := it.y + th/2 - 1
		cv.fill(image.Rect(it.x, mid, it.x+swatchLen*s, mid+2*s), it.idx)
		cv.text(it.x+(swatchLen+advance)*s, it.y, it.name, s, idxBlack)
	}
}
