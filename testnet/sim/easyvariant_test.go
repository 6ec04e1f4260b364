package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/sim/workload"
)

// variantSWF is a five-processor machine where the two EASY variants
// part: A (2 processors, estimate 10 s) runs 100 s; B (2, 50 s) runs
// 50 s; at 20 s the head C (3 processors) and D (1 processor, 20 s)
// arrive. Counting the overrunning A as ending now puts C's shadow time
// at 20 s, so D may not backfill and waits for C to end (60 s); not counting
// A, the shadow is B's end (50 s) and D starts at once.
const variantSWF = `; MaxProcs: 5
1 0 0 100 2 -1 -1 2 10 -1 1 1 1 1 1 1 -1 -1
2 0 0 50 2 -1 -1 2 50 -1 1 1 1 1 1 1 -1 -1
3 20 0 10 3 -1 -1 3 10 -1 1 1 1 1 1 1 -1 -1
4 20 0 20 1 -1 -1 1 20 -1 1 1 1 1 1 1 -1 -1
`

func TestEASYVariants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "variant.swf")
	if err := os.WriteFile(path, []byte(variantSWF), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := workload.OpenSWF(path, workload.SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := SWFCluster(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		overrun, pass string
		dStart        time.Duration
	}{
		{"", "", 60 * time.Second},
		{OverrunNow, PassEvent, 60 * time.Second},
		{OverrunNever, PassInstant, 20 * time.Second},
		{OverrunNever, PassEvent, 20 * time.Second},
	} {
		in, err := Simulate(Config{Cluster: c, Workload: w, Scheduler: "easy", Seed: 1, EASYOverrun: tc.overrun, EASYPass: tc.pass})
		if err != nil {
			t.Fatal(err)
		}
		var d, head time.Duration = -1, -1
		for _, j := range in.Jobs {
			switch j.ID {
			case w.Jobs[3].ID:
				d = j.Tasks[0].Start
			case w.Jobs[2].ID:
				head = j.Tasks[0].Start
			}
		}
		if d != tc.dStart || head != 50*time.Second {
			t.Errorf("overrun %q, pass %q: D starts at %v (want %v), the head at %v (want 50s)", tc.overrun, tc.pass, d, tc.dStart, head)
		}
	}
	if _, err := Simulate(Config{Cluster: c, Workload: w, Scheduler: "easy", EASYOverrun: "later"}); err == nil {
		t.Error("an unknown overrun rule was accepted")
	}
}
