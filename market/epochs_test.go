package market

import (
	"testing"
	"time"
)

func TestNextEpoch(t *testing.T) {
	m := &Market{}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tb, tc := epochTag("b", "j1", at), epochTag("c", "j1", at)
	tb2 := epochTag("b", "j1", at.Add(time.Second)) // b takes it over again
	first := &JobRecord{ID: "j1"}
	b, c, b2 := &JobRecord{ID: "j1", EpochTag: tb}, &JobRecord{ID: "j1", EpochTag: tc}, &JobRecord{ID: "j1", EpochTag: tb2}
	cases := []struct {
		name string
		j    *JobRecord
		e    uint64
		want uint64
	}{
		{"first manager counts", first, 0, 1},
		{"first manager counts on", first, 7, 8},
		{"a take-over leaves its range", b, 7, 1<<20 | uint64(tb)},
		{"a take-over counts above its tag", b, 1<<20 | uint64(tb), 2<<20 | uint64(tb)},
		{"a second take-over from the same record", c, 7, 1<<20 | uint64(tc)},
		{"tag 0 above the first range", first, 1<<20 | uint64(tb), 2 << 20},
		{"near 2^32 counts by one", b, 4095<<20 | 5, 4095<<20 | 6},
	}
	for _, x := range cases {
		if got := m.nextEpoch(x.j, x.e); got != x.want {
			t.Errorf("%s: nextEpoch(%d) = %d, want %d", x.name, x.e, got, x.want)
		}
	}
	if tb == tc || tb == tb2 || tb == 0 || tc == 0 || tb2 == 0 {
		t.Fatalf("tags %d, %d and %d: want distinct and non-zero", tb, tc, tb2)
	}
	// Managers starting from one record never hand out one epoch (unless
	// their tags collide), and every epoch stays below 2^32.
	seen := map[uint64]int{}
	for i, j := range []*JobRecord{first, b, c, b2} {
		e := uint64(3)
		for range 50 {
			e = m.nextEpoch(j, e)
			if e >= 1<<32 {
				t.Fatalf("record %d: epoch %d not below 2^32", i, e)
			}
			if who, dup := seen[e]; dup {
				t.Fatalf("epoch %d handed out from records %d and %d", e, who, i)
			}
			seen[e] = i
		}
	}
}

func TestEpochSteps(t *testing.T) {
	tag := uint64(12345)
	for _, x := range []struct{ from, to, want uint64 }{
		{1, 3, 2},
		{3, 1, 0},
		{3, 1<<20 | tag, 1},
		{1<<20 | tag, 4<<20 | tag, 3},
		{2 << 20, 2<<20 | 3, 3},
	} {
		if got := epochSteps(x.from, x.to); got != x.want {
			t.Errorf("epochSteps(%d, %d) = %d, want %d", x.from, x.to, got, x.want)
		}
	}
}
