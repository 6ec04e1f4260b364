package store

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunGC(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[[]byte](s, "blobs")
		// Overwrite value-log-sized values so there is garbage to collect.
		big := bytes.Repeat([]byte("g"), 100<<10)
		for i := range 20 {
			if err := b.Put("k", append(big, byte(i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RunGC(); err != nil {
			t.Fatalf("RunGC: %v", err)
		}
		if v, ok, err := b.Get("k"); err != nil || !ok || v[len(v)-1] != 19 {
			t.Fatalf("value after GC: ok %v, err %v", ok, err)
		}
	})
}

func TestGCLoopStops(t *testing.T) {
	s := openDisk(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.GCLoop(ctx, time.Millisecond)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("GCLoop ignored context cancellation")
	}

	// It also stops once the store is closed.
	done = make(chan struct{})
	go func() {
		s.GCLoop(context.Background(), time.Millisecond)
		close(done)
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("GCLoop kept running after Close")
	}
	if err := s.RunGC(); !errors.Is(err, ErrClosed) {
		t.Fatalf("RunGC after Close: %v", err)
	}
}
