package predict

import (
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	nz := logNormal(0.3)
	src := NewRuntime(RuntimeConfig{})
	types := map[string]time.Duration{"a": time.Second, "b": time.Minute, "c": time.Hour}
	for i := range 30 {
		for _, typ := range []string{"a", "b", "c"} {
			if i%3 == 0 && typ == "c" {
				continue
			}
			src.Observe(typ, nz.sample(rng, types[typ]))
		}
	}
	snap := src.Snapshot()
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"type"`, `"samples"`, `"log_mean"`, `"log_var"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("snapshot JSON %s lacks key %s", raw, key)
		}
	}
	var back []TypeStats
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	dst := NewRuntime(RuntimeConfig{})
	dst.Observe("stale", time.Second) // Restore replaces, not merges
	dst.Restore(back)
	if got := dst.Snapshot(); !reflect.DeepEqual(got, snap) {
		t.Fatalf("Snapshot after Restore = %+v, want %+v", got, snap)
	}
	if got := dst.Predict("stale", 0).Source; got != SourceDefault {
		t.Errorf("type not in the snapshot survived Restore: Source = %q", got)
	}
	// Both models keep evolving identically.
	for _, typ := range []string{"a", "b", "c"} {
		src.Observe(typ, 2*types[typ])
		dst.Observe(typ, 2*types[typ])
		if p, q := src.Predict(typ, 0), dst.Predict(typ, 0); p != q {
			t.Errorf("Predict(%q): original %+v, restored %+v", typ, p, q)
		}
	}
}

func TestSnapshotOrderIsRecency(t *testing.T) {
	r := NewRuntime(RuntimeConfig{})
	for _, typ := range []string{"x", "y", "z", "x"} {
		r.Observe(typ, time.Second)
	}
	var got []string
	for _, ts := range r.Snapshot() {
		got = append(got, ts.Type)
	}
	if want := []string{"y", "z", "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot order = %v, want %v", got, want)
	}
	if s := NewRuntime(RuntimeConfig{}).Snapshot(); s == nil || len(s) != 0 {
		t.Errorf("empty Snapshot = %#v, want an empty non-nil slice", s)
	}
}

func TestRestoreSkipsInvalidAndBounds(t *testing.T) {
	r := NewRuntime(RuntimeConfig{MaxTypes: 2})
	r.Restore([]TypeStats{
		{Type: "no-samples", Samples: 0, LogMean: 1},
		{Type: "nan", Samples: 1, LogMean: math.NaN()},
		{Type: "inf-var", Samples: 1, LogVar: math.Inf(1)},
		{Type: "neg-var", Samples: 1, LogVar: -1},
		{Type: "old", Samples: 1, LogMean: math.Log(5)},
		{Type: "dup", Samples: 1, LogMean: math.Log(1)},
		{Type: "new", Samples: 2, LogMean: math.Log(3)},
		{Type: "dup", Samples: 4, LogMean: math.Log(2)},
	})
	want := []TypeStats{
		{Type: "new", Samples: 2, LogMean: math.Log(3)},
		{Type: "dup", Samples: 4, LogMean: math.Log(2)},
	}
	if got := r.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
	if got := r.Predict("dup", 0).Runtime; got != 2*time.Second {
		t.Errorf("Predict(dup).Runtime = %v, want 2s", got)
	}
}

func TestRestoredExtremesStayInRange(t *testing.T) {
	r := NewRuntime(RuntimeConfig{})
	r.Restore([]TypeStats{
		{Type: "tiny", Samples: 1, LogMean: -1000},
		{Type: "huge", Samples: 1, LogMean: 1000, LogVar: 50},
	})
	if got := r.Predict("tiny", 0).Runtime; got != 1 {
		t.Errorf("tiny Runtime = %v, want 1ns", got)
	}
	if p := r.Predict("huge", 0); p.Runtime != math.MaxInt64 || p.Stddev != math.MaxInt64 {
		t.Errorf("huge Predict = %+v, want saturated Runtime and Stddev", p)
	}
}
