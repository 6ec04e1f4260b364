package store

import (
	"errors"
	"strings"
	"testing"
)

func TestBatchCommitsAcrossBuckets(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		jobs := NewBucket[record](s, "jobs")
		tasks := NewBucket[int](s, "tasks")
		if err := tasks.Put("old", 1); err != nil {
			t.Fatal(err)
		}
		err := s.Batch(func(b *Batch) error {
			if err := BatchPut(b, jobs, "j1", record{Name: "j", N: 1}); err != nil {
				return err
			}
			if err := BatchPut(b, tasks, "t1", 7); err != nil {
				return err
			}
			BatchDelete(b, tasks, "old")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := jobs.Get("j1"); !ok {
			t.Fatal("j1 missing")
		}
		if v, ok, _ := tasks.Get("t1"); !ok || v != 7 {
			t.Fatal("t1 missing")
		}
		if _, ok, _ := tasks.Get("old"); ok {
			t.Fatal("old not deleted")
		}
	})
}

func TestBatchAllOrNothing(t *testing.T) {
	boom := errors.New("boom")
	maxStr := strings.Repeat("v", MaxValueSize)
	tests := []struct {
		name string
		fn   func(b *Batch, jobs *Bucket[string], tasks *Bucket[string]) error
		want error // matched with errors.Is
	}{
		{"callback error", func(b *Batch, jobs, tasks *Bucket[string]) error {
			_ = BatchPut(b, jobs, "new", "x")
			BatchDelete(b, tasks, "keep")
			return boom
		}, boom},
		{"oversized value ignored by callback", func(b *Batch, jobs, tasks *Bucket[string]) error {
			_ = BatchPut(b, jobs, "new", "x")
			_ = BatchPut(b, tasks, "huge", maxStr)
			return nil
		}, ErrTooLarge},
		{"invalid key in delete", func(b *Batch, jobs, tasks *Bucket[string]) error {
			_ = BatchPut(b, jobs, "new", "x")
			BatchDelete(b, tasks, "")
			return nil
		}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openMem(t)
			jobs := NewBucket[string](s, "jobs")
			tasks := NewBucket[string](s, "tasks")
			if err := tasks.Put("keep", "k"); err != nil {
				t.Fatal(err)
			}
			err := s.Batch(func(b *Batch) error { return tt.fn(b, jobs, tasks) })
			if !errors.Is(err, tt.want) {
				t.Fatalf("Batch err = %v, want %v", err, tt.want)
			}
			if _, ok, _ := jobs.Get("new"); ok {
				t.Fatal("failed batch wrote jobs/new")
			}
			if _, ok, _ := tasks.Get("keep"); !ok {
				t.Fatal("failed batch deleted tasks/keep")
			}
		})
	}
}

// TestBatchTransactionLimit shows the in-memory per-transaction limit:
// three maximal values fit on disk (large values go to the value log) but
// not in one in-memory transaction, where the batch fails as ErrTooLarge and
// writes nothing.
func TestBatchTransactionLimit(t *testing.T) {
	big := strings.Repeat("v", MaxValueSize-2)
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[string](s, "big")
		err := s.Batch(func(bt *Batch) error {
			for _, k := range []string{"1", "2", "3"} {
				if err := BatchPut(bt, b, k, big); err != nil {
					return err
				}
			}
			return nil
		})
		n, _ := b.Count("")
		if s.inMemory {
			if !errors.Is(err, ErrTooLarge) || n != 0 {
				t.Fatalf("in memory: err %v, %d written; want ErrTooLarge, 0", err, n)
			}
			return
		}
		if err != nil || n != 3 {
			t.Fatalf("on disk: err %v, %d written; want nil, 3", err, n)
		}
	})
}

func TestBatchMisuse(t *testing.T) {
	s := openMem(t)
	other := openMem(t)
	mine := NewBucket[int](s, "n")
	foreign := NewBucket[int](other, "n")

	var leaked *Batch
	if err := s.Batch(func(b *Batch) error { leaked = b; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := BatchPut(leaked, mine, "k", 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("BatchPut after the callback: err = %v, want ErrInvalid", err)
	}
	err := s.Batch(func(b *Batch) error {
		_ = BatchPut(b, mine, "k", 1)
		_ = BatchPut(b, foreign, "k", 1)
		return nil
	})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("bucket of another store: err = %v, want ErrInvalid", err)
	}
	if _, ok, _ := mine.Get("k"); ok {
		t.Fatal("batch with a foreign bucket wrote")
	}
}
