package main

import (
	"strconv"
	"strings"
)

// benchMetrics reads the metrics of every line of a `go test -bench`
// output that starts with name: one map of unit to value per line.
func benchMetrics(out, name string) []map[string]float64 {
	var all []map[string]float64
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, name) {
			continue
		}
		f := strings.Fields(l)
		m := map[string]float64{}
		// name, iterations, then value-unit pairs
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		all = append(all, m)
	}
	return all
}

// fastPath prints issue 24's latency targets from the benchmark output:
// submit → start on one node against a bare `agora id` (done-when 5)
// and an auction round that needs remote bids against the bare round
// trips timed during the rounds (done-when 6), one verdict per
// repetition.
func (r *report) fastPath(out string) {
	starts := benchMetrics(out, "BenchmarkSubmitToStart")
	rounds := benchMetrics(out, "BenchmarkNetAuctionRound/window=default")
	if len(starts) == 0 && len(rounds) == 0 {
		return
	}
	r.p("Latency targets (issue 24):")
	r.p("")
	for i, m := range starts {
		id, st, ratio := m["id-ms"], m["submit-to-start-ms"], m["finish/submit"]
		r.p("- one node through the CLI, run %d: submit → start median %.1f ms against a bare `agora id`'s %.1f ms (%+.1f ms, want ≤ +10 ms: %s); 200 trivial jobs all finish %.3f× after their submissions took (want ≤ 1.2×: %s).",
			i+1, st, id, st-id, okWord(st <= id+10), ratio, okWord(ratio <= 1.2))
	}
	for i, m := range rounds {
		round, bare := m["round_p99_ms"], m["bare_during_p99_ms"]
		r.p("- three nodes, an auction round with remote bids, run %d: p99 %.2f ms against the bare round trips' %.2f ms timed during the rounds (%+.2f ms, want ≤ +2 ms: %s).",
			i+1, round, bare, round-bare, okWord(round <= bare+2))
	}
	r.p("")
}
