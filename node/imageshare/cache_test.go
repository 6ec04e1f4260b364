package imageshare

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestVictims(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	id := func(s string) string { return digest([]byte(s)) }
	e := func(name string, size int64, ago int) CacheEntry {
		return CacheEntry{ID: id(name), Size: size, Used: t0.Add(-time.Duration(ago) * time.Hour)}
	}
	entries := []CacheEntry{e("a", 40, 3), e("b", 30, 1), e("c", 20, 2), e("d", 10, 0)}
	tests := []struct {
		name  string
		limit int64
		keep  []string
		want  []string
	}{
		{name: "no bound", limit: 0},
		{name: "under the bound", limit: 100},
		{name: "least recently used first", limit: 60, want: []string{"a"}},
		{name: "as many as it takes", limit: 40, want: []string{"a", "c"}},
		{name: "kept ones skipped", limit: 55, keep: []string{"a"}, want: []string{"c", "b"}},
		{name: "cannot get under: removes all it may", limit: 5, keep: []string{"d"}, want: []string{"a", "c", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keep := map[string]bool{}
			for _, k := range tc.keep {
				keep[id(k)] = true
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, id(w))
			}
			shuffled := slices.Clone(entries)
			slices.Reverse(shuffled)
			if got := Victims(shuffled, tc.limit, keep); !slices.Equal(got, want) {
				t.Fatalf("Victims = %v, want %v", got, want)
			}
		})
	}
}

// TestCacheRecord: the record survives a restart, and a damaged one is
// set aside rather than stopping the node.
func TestCacheRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image-cache.json")
	c, err := OpenCache(path, 50)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a, b := digest([]byte("a")), digest([]byte("b"))
	c.Added(a, 40, t0)
	c.Added(b, 30, t0.Add(time.Hour))
	c.Used(a, t0.Add(2*time.Hour)) // now b is the least recently used
	c.Used(digest([]byte("operator's")), t0)
	c2, err := OpenCache(path, 50)
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Victims(nil); !slices.Equal(got, []string{b}) {
		t.Fatalf("after reopening, victims %v, want [b]", got)
	}
	c2.Removed(b)
	if got := c2.Victims(nil); len(got) != 0 {
		t.Fatalf("after removing b, victims %v", got)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	c3, err := OpenCache(path, 50)
	if err != nil || len(c3.entries) != 0 {
		t.Fatalf("damaged record: %v, %d entries", err, len(c3.entries))
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatalf("damaged record not set aside: %v", err)
	}
}
