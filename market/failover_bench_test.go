package market

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPeerGoneWithHistory: what a peer's departure costs a node
// that holds copies of 20 unfinished jobs, with and without the copies
// of 5,000 finished ones (kept for status queries until their retention
// passes). Only the unfinished ones can need taking over, so the
// departure should cost the same either way: the metric
// with_history_vs_without near 1 says it does; a departure that scanned
// every held copy would make it grow with the node's history (the check
// this replaced decoded every stored copy each second: 108 ms with 5,000
// finished ones).
func BenchmarkPeerGoneWithHistory(b *testing.B) {
	holder := func(finished int) *Market {
		m, err := New(Config{Self: "n0", Capacity: cpuNode(4), JobRetention: 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		peers := []NodeID{"n0", "n1", "n2"}
		for _, p := range peers[1:] {
			m.Advert(t0, Peer{ID: p, Capacity: cpuNode(4), Free: cpuNode(4)})
		}
		js := job("f", task("t", 1000))
		for i := range 20 + finished {
			rec := JobRecord{ID: fmt.Sprintf("j-%05d", i), Manager: "n1", Spec: js, State: JobRunning, Submitted: t0}
			if i >= 20 {
				rec.State, rec.Finished = JobSucceeded, t0
			}
			m.ReplicaStored(t0, rec, peers[:2])
		}
		m.Ready()
		return m
	}
	// n2 leaves and comes back: no copy names it, so nothing is taken
	// over and the state is the same for the next round.
	depart := func(m *Market, now time.Time) time.Duration {
		start := time.Now()
		m.PeerGone(now, "n2")
		m.Advert(now, Peer{ID: "n2", Capacity: cpuNode(4), Free: cpuNode(4)})
		m.Ready()
		return time.Since(start)
	}
	without, with := holder(0), holder(5000)
	var tWithout, tWith time.Duration
	now := t0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		tWithout += depart(without, now)
		tWith += depart(with, now)
	}
	b.ReportMetric(float64(tWith.Nanoseconds())/float64(b.N), "ns/departure")
	b.ReportMetric(float64(tWith)/float64(tWithout), "with_history_vs_without")
}
