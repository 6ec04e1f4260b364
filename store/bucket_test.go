package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestBucketPutGetDelete(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[record](s, "jobs")
		if _, ok, err := b.Get("missing"); err != nil || ok {
			t.Fatalf("Get(missing) = ok %v, err %v", ok, err)
		}
		want := record{Name: "train", N: 3}
		if err := b.Put("j1", want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := b.Get("j1")
		if err != nil || !ok || got != want {
			t.Fatalf("Get = %+v, %v, %v; want %+v", got, ok, err, want)
		}
		if err := b.Put("j1", record{Name: "train", N: 4}); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := b.Get("j1"); got.N != 4 {
			t.Fatalf("overwrite: N = %d, want 4", got.N)
		}
		if err := b.Delete("j1"); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := b.Get("j1"); err != nil || ok {
			t.Fatalf("Get after Delete = ok %v, err %v", ok, err)
		}
		if err := b.Delete("j1"); err != nil {
			t.Fatalf("Delete of missing key: %v", err)
		}
	})
}

func TestBucketListScanOrderAndIsolation(t *testing.T) {
	s := openMem(t)
	a := NewBucket[int](s, "a")
	ab := NewBucket[int](s, "ab")
	other := NewBucket[string](s, "other")
	// Insert out of order; keys may contain '/'.
	for i, k := range []string{"x/3", "x/1", "y", "x/2", "x"} {
		if err := a.Put(k, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"x/9", "zz"} {
		if err := ab.Put(k, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Put("x/1", "s"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMeta("x/1", "meta"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		b      *Bucket[int]
		prefix string
		want   []string
	}{
		{"a all", a, "", []string{"x", "x/1", "x/2", "x/3", "y"}},
		{"a x/", a, "x/", []string{"x/1", "x/2", "x/3"}},
		{"a x", a, "x", []string{"x", "x/1", "x/2", "x/3"}},
		{"a none", a, "q", nil},
		{"ab all", ab, "", []string{"x/9", "zz"}},
		{"ab x", ab, "x", []string{"x/9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, err := tt.b.List(tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, e := range entries {
				keys = append(keys, e.Key)
			}
			if fmt.Sprint(keys) != fmt.Sprint(tt.want) {
				t.Fatalf("List(%q) keys = %v, want %v", tt.prefix, keys, tt.want)
			}
			n, err := tt.b.Count(tt.prefix)
			if err != nil || n != len(tt.want) {
				t.Fatalf("Count(%q) = %d, %v; want %d", tt.prefix, n, err, len(tt.want))
			}
			var scanned []string
			err = tt.b.Scan(tt.prefix, func(k string, _ int) (bool, error) {
				scanned = append(scanned, k)
				return true, nil
			})
			if err != nil || fmt.Sprint(scanned) != fmt.Sprint(tt.want) {
				t.Fatalf("Scan(%q) = %v, %v; want %v", tt.prefix, scanned, err, tt.want)
			}
		})
	}

	entries, _ := a.List("x/")
	if entries[0].Value != 1 || entries[2].Value != 0 {
		t.Fatalf("List values = %+v", entries)
	}
}

func TestBucketScanStopsAndPassesErrors(t *testing.T) {
	s := openMem(t)
	b := NewBucket[int](s, "n")
	for i := range 5 {
		if err := b.Put(fmt.Sprintf("k%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	var seen []int
	err := b.Scan("", func(_ string, v int) (bool, error) {
		seen = append(seen, v)
		return v < 2, nil
	})
	if err != nil || fmt.Sprint(seen) != "[0 1 2]" {
		t.Fatalf("early stop: seen %v, err %v", seen, err)
	}
	boom := errors.New("boom")
	err = b.Scan("", func(string, int) (bool, error) { return true, boom })
	if err != boom {
		t.Fatalf("Scan callback error = %v, want it unchanged", err)
	}
}

func TestBucketDecodeError(t *testing.T) {
	s := openMem(t)
	if err := NewBucket[string](s, "t").Put("k", "not a number"); err != nil {
		t.Fatal(err)
	}
	_, _, err := NewBucket[int](s, "t").Get("k")
	if err == nil || !strings.HasPrefix(err.Error(), "store: get t/k: decode: ") {
		t.Fatalf("decode error = %v", err)
	}
}

func TestNewBucketPanicsOnBadName(t *testing.T) {
	s := openMem(t)
	for _, name := range []string{"", "a/b", "/", strings.Repeat("n", MaxKeySize+1)} {
		t.Run(fmt.Sprintf("%.10q", name), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("NewBucket(%q) did not panic", name)
				}
			}()
			NewBucket[int](s, name)
		})
	}
}

func TestBucketLimits(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[string](s, "big")
		// A value whose JSON encoding is exactly MaxValueSize fits, in
		// memory as well as on disk.
		maxStr := strings.Repeat("v", MaxValueSize-2)
		if err := b.Put("max", maxStr); err != nil {
			t.Fatalf("Put of a MaxValueSize value: %v", err)
		}
		if got, ok, err := b.Get("max"); err != nil || !ok || got != maxStr {
			t.Fatalf("Get of the MaxValueSize value: ok %v, err %v", ok, err)
		}

		tests := []struct {
			name    string
			do      func() error
			kind    error
			mention string
		}{
			{"value over limit", func() error { return b.Put("k", maxStr+"v") }, ErrTooLarge, "MaxValueSize"},
			{"key over limit", func() error { return b.Put(strings.Repeat("k", MaxKeySize+1), "") }, ErrTooLarge, "MaxKeySize"},
			{"empty key", func() error { return b.Put("", "v") }, ErrInvalid, "empty key"},
			{"update over limit", func() error {
				return b.Update("u", func(v *string, _ bool) (bool, error) { *v = maxStr + "v"; return true, nil })
			}, ErrTooLarge, "MaxValueSize"},
			{"meta over limit", func() error { return s.PutMeta("m", maxStr+"xxx") }, ErrTooLarge, "MaxValueSize"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.do()
				if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.mention) ||
					!strings.HasPrefix(err.Error(), "store: ") {
					t.Fatalf("err = %v, want %v mentioning %q", err, tt.kind, tt.mention)
				}
			})
		}
		if _, ok, _ := b.Get("u"); ok {
			t.Fatal("oversized Update wrote a value")
		}
	})
}

func TestBucketListLimit(t *testing.T) {
	defer func(old int) { listLimit = old }(listLimit)
	listLimit = 20

	s := openMem(t)
	b := NewBucket[int](s, "many")
	err := s.Batch(func(bt *Batch) error {
		for i := range listLimit + 1 {
			if err := BatchPut(bt, b, fmt.Sprintf("%03d", i), i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(""); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxListEntries") {
		t.Fatalf("List over the limit: err = %v", err)
	}
	if entries, err := b.List("00"); err != nil || len(entries) != 10 {
		t.Fatalf("List under the limit: %d entries, %v", len(entries), err)
	}
	if n, err := b.Count(""); err != nil || n != listLimit+1 {
		t.Fatalf("Count = %d, %v", n, err)
	}
}

func TestBucketUpdateSemantics(t *testing.T) {
	s := openMem(t)
	b := NewBucket[record](s, "r")

	// Create.
	err := b.Update("k", func(v *record, exists bool) (bool, error) {
		if exists {
			t.Error("exists on a missing key")
		}
		*v = record{Name: "new", N: 1}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Modify.
	err = b.Update("k", func(v *record, exists bool) (bool, error) {
		if !exists || v.Name != "new" {
			t.Errorf("got %+v, exists %v", *v, exists)
		}
		v.N++
		return true, nil
	})
	if got, _, _ := b.Get("k"); err != nil || got.N != 2 {
		t.Fatalf("after modify: %+v, %v", got, err)
	}
	// An error aborts without writing and comes back unchanged.
	boom := errors.New("boom")
	err = b.Update("k", func(v *record, _ bool) (bool, error) {
		v.N = 99
		return true, boom
	})
	if err != boom {
		t.Fatalf("Update error = %v, want it unchanged", err)
	}
	if got, _, _ := b.Get("k"); got.N != 2 {
		t.Fatalf("failed Update wrote: %+v", got)
	}
	// keep=false deletes; on a missing key it is a no-op.
	for range 2 {
		if err := b.Update("k", func(*record, bool) (bool, error) { return false, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := b.Get("k"); ok {
		t.Fatal("keep=false did not delete")
	}
}

func TestBucketUpdateConcurrentCounter(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[int](s, "counters")
		// A second handle on the same bucket shares the key lock and data.
		b2 := NewBucket[int](s, "counters")
		const workers, perWorker = 8, 50
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			bk := b
			if w%2 == 1 {
				bk = b2
			}
			wg.Go(func() {
				for range perWorker {
					err := bk.Update("c", func(v *int, _ bool) (bool, error) {
						*v++
						return true, nil
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got, _, err := b.Get("c"); err != nil || got != workers*perWorker {
			t.Fatalf("counter = %d, %v; want %d", got, err, workers*perWorker)
		}
	})
}

// TestBucketUpdateRetriesOnConflict makes a blind Put of the same key
// commit while an Update transaction is open, which is a real badger
// conflict: the Update must rerun fn on the fresh value, and give up with
// ErrConflict after a bounded number of attempts.
func TestBucketUpdateRetriesOnConflict(t *testing.T) {
	s := openMem(t)
	b := NewBucket[int](s, "c")

	calls := 0
	err := b.Update("k", func(v *int, _ bool) (bool, error) {
		calls++
		if calls == 1 {
			if err := b.Put("k", 41); err != nil {
				return false, err
			}
		}
		*v++
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := b.Get("k"); calls != 2 || got != 42 {
		t.Fatalf("after one conflict: calls %d, value %d; want 2, 42", calls, got)
	}

	calls = 0
	err = b.Update("k", func(v *int, _ bool) (bool, error) {
		calls++
		if err := b.Put("k", 0); err != nil {
			return false, err
		}
		*v = -1
		return true, nil
	})
	if !errors.Is(err, ErrConflict) || calls != maxUpdateAttempts {
		t.Fatalf("endless conflicts: err %v after %d calls; want ErrConflict after %d",
			err, calls, maxUpdateAttempts)
	}
	if got, _, _ := b.Get("k"); got != 0 {
		t.Fatalf("abandoned Update wrote %d", got)
	}
}
