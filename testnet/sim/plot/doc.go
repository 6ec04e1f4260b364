// Package plot renders simple line charts to PNG for the performance
// documentation (docs/performance.md): a Chart of named Series on linear
// or log10 axes, with ticks, tick labels, axis labels, a title and a
// legend, and CDF to turn a sample into an empirical distribution.
//
// It owns the whole raster: the layout, the axis scales and their nice
// ticks, line drawing, and a 5x7 bitmap font for printable ASCII, so it
// needs nothing outside the Go standard library. Output is deterministic:
// the same Chart always encodes to the same bytes, so plots can be
// regenerated and diffed.
//
// It is a leaf: it must never import the simulator, its metrics or any
// other package of this module; callers convert their figures to Series.
package plot
