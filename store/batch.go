package store

import (
	"errors"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
)

// Batch collects writes to any number of buckets of one Store and commits
// them atomically. It is only valid inside the callback passed to
// Store.Batch. Use it with BatchPut and BatchDelete.
type Batch struct {
	s   *Store
	mu  sync.Mutex
	txn *badger.Txn // nil once the callback returned
	err error       // first write error; it aborts the batch
}

// Batch runs fn and then commits every write it made through BatchPut and
// BatchDelete in one transaction: either all of them are applied or none.
// If fn returns an error, or any write inside it failed, nothing is
// written; fn's own error is returned unchanged, a failed write's error
// otherwise. A batch larger than badger's transaction limit fails with an
// error matching ErrTooLarge.
func (s *Store) Batch(fn func(b *Batch) error) error {
	const op = "batch"
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()
	if err := s.Writable(); err != nil {
		return err
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()

	b := &Batch{s: s, txn: txn}
	ferr := fn(b)
	b.mu.Lock()
	b.txn = nil
	werr := b.err
	b.mu.Unlock()
	switch {
	case ferr != nil:
		return ferr
	case werr != nil:
		return werr
	}
	return wrapErr(op+" commit", txn.Commit())
}

// write applies one write to the batch's transaction, recording the first
// failure so the batch is never committed partially.
func (b *Batch) write(op string, bs *Store, apply func(txn *badger.Txn) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.txn == nil:
		return kindf(ErrInvalid, "store: %s: batch used outside its callback", op)
	case bs != b.s:
		b.err = kindf(ErrInvalid, "store: %s: bucket belongs to another store", op)
		return b.err
	case b.err != nil:
		return b.err
	}
	if err := apply(b.txn); err != nil {
		var p passErr
		if errors.As(err, &p) {
			b.err = p.err
		} else {
			b.err = wrapErr(op, err)
		}
		return b.err
	}
	return nil
}

// BatchPut adds "store v under key in bk" to the batch. An error (invalid
// key, oversized value, transaction too large) is also recorded in the
// batch, which then commits nothing.
func BatchPut[T any](b *Batch, bk *Bucket[T], key string, v T) error {
	op := "batch " + bk.op("put", key)
	return b.write(op, bk.s, func(txn *badger.Txn) error {
		if bk.large > 0 {
			return passErr{errLargeBucket(op)}
		}
		if err := checkKey(op, key); err != nil {
			return passErr{err}
		}
		data, err := bk.encode(op, v)
		if err != nil {
			return passErr{err}
		}
		return txn.Set(bk.key(key), data)
	})
}

// BatchDelete adds "delete key from bk" to the batch. Any error is
// recorded in the batch, which then commits nothing, and is returned by
// Store.Batch.
func BatchDelete[T any](b *Batch, bk *Bucket[T], key string) {
	op := "batch " + bk.op("delete", key)
	_ = b.write(op, bk.s, func(txn *badger.Txn) error {
		if bk.large > 0 {
			return passErr{errLargeBucket(op)}
		}
		if err := checkKey(op, key); err != nil {
			return passErr{err}
		}
		return txn.Delete(bk.key(key))
	})
}
