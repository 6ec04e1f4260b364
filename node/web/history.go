package web

import (
	"net/http"
	"sync"
	"time"
)

// History keeps what the overview's charts draw, for a day: one Sample
// every HistoryStep, in a ring, so a page opened now shows the last hours
// and not only what it saw since it opened. The node adds the samples;
// the page reads them from /ui/history and then goes on from /metrics.
type History struct {
	mu   sync.Mutex
	ring []Sample
	next int
	full bool
}

// Sample is the charts' four series at one time.
type Sample struct {
	At      time.Time
	FreeCPU float64 // cores
	Queued  float64 // task replicas awarded here and not started
	Peers   float64 // live peers
	Running float64 // jobs this node manages that are running
}

// HistoryStep and HistoryLen: a sample every 10 s, a day of them.
const (
	HistoryStep = 10 * time.Second
	HistoryLen  = int(24 * time.Hour / HistoryStep)
)

// Add keeps s, dropping the oldest sample once a day's are kept.
func (h *History) Add(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ring == nil {
		h.ring = make([]Sample, HistoryLen)
	}
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	h.full = h.full || h.next == 0
}

// Since returns the samples taken after t, oldest first.
func (h *History) Since(t time.Time) []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []Sample
	if h.full {
		all = append(all, h.ring[h.next:]...)
	}
	all = append(all, h.ring[:h.next]...)
	i := 0
	for i < len(all) && !all[i].At.After(t) {
		i++
	}
	return all[i:]
}

// maxHistoryWindow bounds what /ui/history sends.
const maxHistoryWindow = 24 * time.Hour

// history serves the samples of the last ?window= (a duration, at most a
// day; default an hour) as [[unix seconds, free CPU, queued, peers,
// running], ...].
func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	window := time.Hour
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxHistoryWindow {
			http.Error(w, "window: want a duration up to 24h", http.StatusBadRequest)
			return
		}
		window = d
	}
	rows := [][5]float64{}
	if hs := h.src.History(); hs != nil {
		for _, s := range hs.Since(time.Now().Add(-window)) {
			rows = append(rows, [5]float64{float64(s.At.Unix()), s.FreeCPU, s.Queued, s.Peers, s.Running})
		}
	}
	writeJSON(w, rows)
}
