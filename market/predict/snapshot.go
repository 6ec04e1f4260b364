package predict

import (
	"container/list"
	"math"
)

// TypeStats is the persisted model of one job type, as Snapshot returns it
// and Restore takes it.
type TypeStats struct {
	// Type is the job type.
	Type string `json:"type"`
	// Samples is the number of runtimes observed.
	Samples int `json:"samples"`
	// LogMean is the EWMA of ln(runtime in seconds).
	LogMean float64 `json:"log_mean"`
	// LogVar is the EWMA variance of ln(runtime in seconds).
	LogVar float64 `json:"log_var"`
}

// Snapshot returns the model of every tracked job type, ordered from the
// least to the most recently updated, so that Restore keeps the eviction
// order.
func (r *Runtime) Snapshot() []TypeStats {
	out := make([]TypeStats, 0, len(r.types))
	for e := r.order.Front(); e != nil; e = e.Next() {
		s := e.Value.(*typeStats)
		out = append(out, TypeStats{Type: s.name, Samples: s.n, LogMean: s.logMean, LogVar: s.logVar})
	}
	return out
}

// Restore replaces the whole model with stats, read as ordered from the
// least to the most recently updated type (the order Snapshot writes).
// Entries with no samples or with non-finite or negative statistics are
// skipped; a repeated type keeps its last entry; beyond MaxTypes the most
// recent entries are kept.
func (r *Runtime) Restore(stats []TypeStats) {
	r.types = make(map[string]*list.Element)
	r.order = list.New()
	for _, ts := range stats {
		if !ts.valid() {
			continue
		}
		s := r.touch(ts.Type)
		s.n, s.logMean, s.logVar = ts.Samples, ts.LogMean, ts.LogVar
	}
}

// valid reports whether ts can be restored.
func (ts TypeStats) valid() bool {
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	return ts.Samples > 0 && finite(ts.LogMean) && finite(ts.LogVar) && ts.LogVar >= 0
}
