package store

import (
	"context"
	"errors"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// DefaultGCInterval is the interval GCLoop uses when given a non-positive
// one.
const DefaultGCInterval = 10 * time.Minute

// RunGC reclaims value-log space: it rewrites value-log files that are at
// least half stale until a round reclaims nothing (or a bounded number of
// rounds ran). It is a no-op in memory and when another GC is running.
func (s *Store) RunGC() error {
	const op = "gc"
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()
	if s.inMemory {
		return nil
	}
	for range maxGCRounds {
		err := s.db.RunValueLogGC(gcDiscardRatio)
		switch {
		case err == nil:
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return nil
		default:
			return wrapErr(op, err)
		}
	}
	return nil
}

// GCLoop calls RunGC every interval (DefaultGCInterval if interval is not
// positive) until ctx is done or the store is closed. It blocks; run it in
// its own goroutine. GC failures are logged, not returned.
func (s *Store) GCLoop(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultGCInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.RunGC(); err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			log.Warnw("value-log GC failed", "dir", s.dir, "err", err)
		}
	}
}
