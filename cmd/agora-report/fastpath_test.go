package main

import (
	"strings"
	"testing"
)

// TestFastPathVerdicts: the latency targets are read from benchmark
// lines and judged against their own run's baselines.
func TestFastPathVerdicts(t *testing.T) {
	out := strings.Join([]string{
		"BenchmarkSubmitToStart-2   	       1	2311878501 ns/op	      1763 finish-200-ms	         1.003 finish/submit	         7.869 id-ms	      1758 submit-200-ms	         6.805 submit-to-start-ms",
		"BenchmarkSubmitToStart-2   	       1	2311878501 ns/op	      1763 finish-200-ms	         1.300 finish/submit	         7.000 id-ms	      1758 submit-200-ms	        17.500 submit-to-start-ms",
		"--- BENCH: BenchmarkNetAuctionRound/window=default-2",
		"BenchmarkNetAuctionRound/window=default-2         	       1	1863470801 ns/op	         0.4771 bare_during_p50_ms	         5.300 bare_during_p99_ms	         5.814 round_p99_ms",
		"BenchmarkNetAuctionRound/window=default-2         	       1	1863470801 ns/op	         5.300 bare_during_p99_ms	         7.400 round_p99_ms",
		"BenchmarkNetAuctionRound/window=2ms-2             	       1	1630864662 ns/op	         5.066 bare_during_p99_ms	         9.505 round_p99_ms",
	}, "\n")
	var r report
	r.fastPath(out)
	got := r.b.String()
	for _, want := range []string{
		"run 1: submit → start median 6.8 ms against a bare `agora id`'s 7.9 ms (-1.1 ms, want ≤ +10 ms: met); 200 trivial jobs all finish 1.003× after their submissions took (want ≤ 1.2×: met)",
		"run 2: submit → start median 17.5 ms against a bare `agora id`'s 7.0 ms (+10.5 ms, want ≤ +10 ms: missed); 200 trivial jobs all finish 1.300× after their submissions took (want ≤ 1.2×: missed)",
		"run 1: p99 5.81 ms against the bare round trips' 5.30 ms timed during the rounds (+0.51 ms, want ≤ +2 ms: met)",
		"run 2: p99 7.40 ms against the bare round trips' 5.30 ms timed during the rounds (+2.10 ms, want ≤ +2 ms: missed)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "run 3") {
		t.Errorf("the 2 ms window's round was judged too:\n%s", got)
	}
	var empty report
	empty.fastPath("PASS\n")
	if empty.b.Len() != 0 {
		t.Errorf("no benchmark lines, yet the report says %q", empty.b.String())
	}
}
