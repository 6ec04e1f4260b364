package store

import (
	"errors"
	"testing"
	"time"
)

// TestWritesStopNearlyFull: below Reserve free, every write is refused
// with ErrNoSpace naming the free space, reads go on, and writes resume
// once the space is back, with nothing written before lost.
func TestWritesStopNearlyFull(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutMeta("before", "kept"); err != nil {
		t.Fatal(err)
	}
	saved := statfsFree
	t.Cleanup(func() { statfsFree = saved })
	statfsFree = func(string) (uint64, error) { return Reserve - 1, nil }
	time.Sleep(spaceCheckEvery)
	b := NewBucket[string](s, "b")
	_, logErr := s.AppendLog("stream", []byte("line"))
	for name, err := range map[string]error{
		"meta":   s.PutMeta("x", "y"),
		"bucket": b.Put("k", "v"),
		"many":   b.PutAll([]Entry[string]{{Key: "k", Value: "v"}}),
		"batch":  s.Batch(func(*Batch) error { return nil }),
		"log":    logErr,
	} {
		if !errors.Is(err, ErrNoSpace) {
			t.Errorf("%s write when nearly full: %v, want ErrNoSpace", name, err)
		}
	}
	if v, ok, err := s.GetMeta("before"); err != nil || !ok || v != "kept" {
		t.Fatalf("read when nearly full: %q %v %v", v, ok, err)
	}
	statfsFree = func(string) (uint64, error) { return Reserve + 1, nil }
	time.Sleep(spaceCheckEvery)
	if err := s.PutMeta("x", "y"); err != nil {
		t.Fatalf("write once space is back: %v", err)
	}
}
