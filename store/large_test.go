package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// blob is a value type whose encoding is about Size bytes.
type blob struct {
	Tag  string `json:"tag"`
	Data string `json:"data"`
}

func sized(tag string, size int) blob { return blob{Tag: tag, Data: strings.Repeat("x", size)} }

// partKeys counts the part keys in s, all buckets.
func partKeys(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(partNS)})
		defer it.Close()
		for it.Seek([]byte(partNS)); it.ValidForPrefix([]byte(partNS)); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustGet(t *testing.T, b *Bucket[blob], key string) blob {
	t.Helper()
	v, ok, err := b.Get(key)
	if err != nil || !ok {
		t.Fatalf("get %s: ok %v, %v", key, ok, err)
	}
	return v
}

// TestLargeValues: a bucket that allows large values stores, reads,
// lists, replaces and deletes values over MaxValueSize, in parts that
// follow the value: replaced by a small one or deleted, they go; the limit
// is enforced, and a plain bucket still refuses them.
func TestLargeValues(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[blob](s, "big").AllowLarge(8 << 20)
		sizes := map[string]int{"a-small": 100, "b-edge": MaxValueSize - 100, "c-one-and-a-half": MaxValueSize * 3 / 2, "d-three": 3 << 20}
		for k, n := range sizes {
			if err := b.Put(k, sized(k, n)); err != nil {
				t.Fatalf("put %s (%d bytes): %v", k, n, err)
			}
		}
		for k, n := range sizes {
			if v := mustGet(t, b, k); v.Tag != k || len(v.Data) != n {
				t.Fatalf("get %s: tag %q, %d bytes, want %d", k, v.Tag, len(v.Data), n)
			}
		}
		list, err := b.List("")
		if err != nil || len(list) != 4 || list[3].Key != "d-three" || len(list[3].Value.Data) != 3<<20 {
			t.Fatalf("list: %d entries, %v", len(list), err)
		}
		if c, _ := b.Count(""); c != 4 {
			t.Fatalf("count %d, want 4 (parts are not entries)", c)
		}
		// 2 parts for 1.5 × MaxValueSize, 7 for 3 MiB.
		if n := partKeys(t, s); n != 2+7 {
			t.Fatalf("%d part keys, want 9", n)
		}
		// Replace large by small, small by large, large by large.
		if err := b.Put("d-three", sized("d2", 10)); err != nil {
			t.Fatal(err)
		}
		if err := b.Put("a-small", sized("a2", 2<<20)); err != nil {
			t.Fatal(err)
		}
		if err := b.Put("c-one-and-a-half", sized("c2", MaxValueSize*5/2)); err != nil {
			t.Fatal(err)
		}
		if v := mustGet(t, b, "d-three"); v.Tag != "d2" || len(v.Data) != 10 {
			t.Fatalf("d-three after replace: %q, %d bytes", v.Tag, len(v.Data))
		}
		if v := mustGet(t, b, "c-one-and-a-half"); v.Tag != "c2" || len(v.Data) != MaxValueSize*5/2 {
			t.Fatalf("c after replace: %q, %d bytes", v.Tag, len(v.Data))
		}
		if n := partKeys(t, s); n != 5+3 {
			t.Fatalf("%d part keys after the replacements, want 8", n)
		}
		if err := b.Delete("a-small"); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete("c-one-and-a-half"); err != nil {
			t.Fatal(err)
		}
		if n := partKeys(t, s); n != 0 {
			t.Fatalf("%d part keys after the deletes, want 0", n)
		}
		// PutAll: small and large together, one key twice (the last wins).
		err = b.PutAll([]Entry[blob]{{"p1", sized("p1", 10)}, {"p2", sized("p2", 1<<20)}, {"p1", sized("p1b", 2<<20)}, {"p3", sized("p3", 20)}})
		if err != nil {
			t.Fatal(err)
		}
		if v := mustGet(t, b, "p1"); v.Tag != "p1b" || len(v.Data) != 2<<20 {
			t.Fatalf("p1: %q, %d bytes", v.Tag, len(v.Data))
		}
		if v := mustGet(t, b, "p2"); len(v.Data) != 1<<20 {
			t.Fatalf("p2: %d bytes", len(v.Data))
		}
		if n := partKeys(t, s); n != 5+3 {
			t.Fatalf("%d part keys after PutAll, want 8", n)
		}
		// Limits and unsupported operations.
		if err := b.Put("huge", sized("h", 9<<20)); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "large-value limit") {
			t.Fatalf("put over the bucket's limit: %v", err)
		}
		plain := NewBucket[blob](s, "plain")
		if err := plain.Put("k", sized("k", MaxValueSize)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("plain bucket, large value: %v", err)
		}
		if err := b.Update("p3", func(*blob, bool) (bool, error) { return true, nil }); !errors.Is(err, ErrInvalid) {
			t.Fatalf("update on a large-value bucket: %v", err)
		}
		if err := s.Batch(func(bt *Batch) error { return BatchPut(bt, b, "x", sized("x", 1)) }); !errors.Is(err, ErrInvalid) {
			t.Fatalf("batch on a large-value bucket: %v", err)
		}
	})
}

// TestLargeValueCrashBetweenPartsAndStub: parts written without their
// stub (a crash in between) leave the old value readable, and the next
// write of the key removes them.
func TestLargeValueCrashBetweenPartsAndStub(t *testing.T) {
	s := openMem(t)
	b := NewBucket[blob](s, "big").AllowLarge(8 << 20)
	if err := b.Put("k", sized("old", 1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.writeParts("k", []byte(`{"tag":"orphan"}`+strings.Repeat(" ", 2<<20))); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, b, "k"); v.Tag != "old" {
		t.Fatalf("after orphan parts: %q", v.Tag)
	}
	if err := b.Put("k", sized("new", 100)); err != nil {
		t.Fatal(err)
	}
	if n := partKeys(t, s); n != 0 {
		t.Fatalf("%d part keys left after the next write", n)
	}
}

// TestLargeValuesSurviveReopen: parts and stubs persist.
func TestLargeValuesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	if err := NewBucket[blob](s, "big").AllowLarge(8<<20).Put("k", sized("k", 3<<20)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDisk(t, dir)
	defer s.Close()
	if v := mustGet(t, NewBucket[blob](s, "big").AllowLarge(8<<20), "k"); len(v.Data) != 3<<20 {
		t.Fatalf("after reopen: %d bytes", len(v.Data))
	}
}

// TestLargeValuesConcurrent: writers replacing one key with large and
// small values while readers read it: every read returns a whole value
// one writer wrote, and no parts are left over.
func TestLargeValuesConcurrent(t *testing.T) {
	s := openMem(t)
	b := NewBucket[blob](s, "big").AllowLarge(8 << 20)
	if err := b.Put("k", sized("w0-10", 10)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 10 {
				size := 10
				if (w+i)%2 == 0 {
					size = MaxValueSize + 1000*i + w
				}
				var err error
				if i%3 == 0 {
					err = b.PutAll([]Entry[blob]{{"k", sized(fmt.Sprintf("w%d-%d", w, size), size)}})
				} else {
					err = b.Put("k", sized(fmt.Sprintf("w%d-%d", w, size), size))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 30 {
				v, ok, err := b.Get("k")
				if err != nil || !ok {
					t.Errorf("get: ok %v, %v", ok, err)
					return
				}
				var w, size int
				if _, err := fmt.Sscanf(v.Tag, "w%d-%d", &w, &size); err != nil || len(v.Data) != size {
					t.Errorf("torn value: tag %q, %d bytes", v.Tag, len(v.Data))
					return
				}
			}
		})
	}
	wg.Wait()
	v := mustGet(t, b, "k")
	want := 0
	if len(v.Data) > MaxValueSize {
		want = (len(v.Data) + 40 + MaxValueSize - 1) / MaxValueSize
	}
	if n := partKeys(t, s); n != want {
		t.Fatalf("%d part keys for a final value of %d bytes, want %d", n, len(v.Data), want)
	}
}
