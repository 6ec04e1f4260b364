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

// simVsReal prints issue 44's done-when 5 from the benchmark output:
// one job list on six real loopback nodes and in the simulator, mean
// wait and makespan within 1.3× of each other, one verdict per
// repetition.
func (r *report) simVsReal(out string) {
	runs := benchMetrics(out, "BenchmarkSimVsReal")
	if len(runs) == 0 {
		return
	}
	r.p("The simulator against real nodes (issue 44, done-when 5; `cmd/agora` BenchmarkSimVsReal: 72 jobs — 1-, 2- and 4-core tasks, gangs of 3 × 1 and 4 × 2 cores, `sleep 1–8` — on six 4-core `agora node` processes with default flags, then the same list, submit times and cluster in the simulator over 3 seeds):")
	r.p("")
	within := func(x float64) bool { return x <= 1.3 && x >= 1/1.3 }
	for i, m := range runs {
		w, s := m["wait_real_vs_sim"], m["makespan_real_vs_sim"]
		r.p("- run %d: mean wait real %.2f s, simulated %.2f s (%.3f×: %s); makespan real %.1f s, simulated %.1f s (%.3f×: %s); want within 1.3× either way.",
			i+1, m["real_mean_wait_s"], m["sim_mean_wait_s"], w, okWord(within(w)), m["real_makespan_s"], m["sim_makespan_s"], s, okWord(within(s)))
	}
	r.p("")
}
