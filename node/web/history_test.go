package web

import (
	"testing"
	"time"
)

// TestHistory: the ring keeps a day of samples, oldest first, and Since
// returns those after a time.
func TestHistory(t *testing.T) {
	var h History
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for i := range HistoryLen + 10 {
		h.Add(Sample{At: t0.Add(time.Duration(i) * HistoryStep), Queued: float64(i)})
	}
	all := h.Since(time.Time{})
	if len(all) != HistoryLen || all[0].Queued != 10 || all[len(all)-1].Queued != float64(HistoryLen+9) {
		t.Fatalf("%d samples, first %v last %v", len(all), all[0].Queued, all[len(all)-1].Queued)
	}
	last := h.Since(t0.Add(time.Duration(HistoryLen+6) * HistoryStep))
	if len(last) != 3 || last[0].Queued != float64(HistoryLen+7) {
		t.Fatalf("since: %+v", last)
	}
}
