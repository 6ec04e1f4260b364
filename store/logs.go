package store

import (
	"math"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
)

// LogChunk is one appended piece of a log stream.
type LogChunk struct {
	// Seq is the chunk's sequence number within its stream, starting at 1.
	Seq uint64
	// Data is the chunk's content.
	Data []byte
}

// streamTable holds the in-memory sequence state of every log stream used
// since Open and not deleted since: DeleteLog drops a stream's entry, so
// that a node deleting old streams does not keep one per stream forever.
type streamTable struct {
	mu sync.Mutex
	m  map[string]*streamState
}

// streamState serialises appends to one stream and caches its last
// sequence number, recovered from the keys on first use.
type streamState struct {
	mu     sync.Mutex
	loaded bool
	last   uint64
	gone   bool // dropped from the table by DeleteLog: look the stream up again
}

func (t *streamTable) init() {
	t.m = make(map[string]*streamState)
}

// get returns the state of stream, creating it if needed.
func (t *streamTable) get(stream string) *streamState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.m[stream]
	if st == nil {
		st = &streamState{}
		t.m[stream] = st
	}
	return st
}

// lock returns the state of stream, created if needed, with its mu held.
// A state DeleteLog dropped while the caller waited for it is passed over
// for the table's current one, so every holder of a stream's lock sees the
// same state.
func (t *streamTable) lock(stream string) *streamState {
	for {
		st := t.get(stream)
		st.mu.Lock()
		if !st.gone {
			return st
		}
		st.mu.Unlock()
	}
}

// drop removes st, whose mu the caller holds, from the table.
func (t *streamTable) drop(stream string, st *streamState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[stream] == st {
		delete(t.m, stream)
	}
	st.gone = true
}

// AppendLog appends data (1 to MaxLogChunkSize bytes) to stream and returns
// its sequence number. Sequence numbers start at 1 and increase by one per
// chunk without gaps; they continue across Close and Open. Appends to one
// stream are serialised, so a reader never sees a chunk before all earlier
// ones. Stream names must be non-empty, at most MaxKeySize bytes and must
// not contain a NUL byte; '/' is allowed.
func (s *Store) AppendLog(stream string, data []byte) (seq uint64, err error) {
	op := "append log " + stream
	if err := checkStream(op, stream); err != nil {
		return 0, err
	}
	switch {
	case len(data) == 0:
		return 0, kindf(ErrInvalid, "store: %s: empty chunk", op)
	case len(data) > MaxLogChunkSize:
		return 0, tooLarge(op, "chunk", len(data), "MaxLogChunkSize", MaxLogChunkSize)
	}
	if err := s.enter(op); err != nil {
		return 0, err
	}
	defer s.leave()

	st := s.streams.lock(stream)
	defer st.mu.Unlock()
	prefix := logPrefix(stream)
	if err := s.recoverSeq(st, prefix); err != nil {
		return 0, wrapErr(op+": recover sequence", err)
	}
	if st.last == math.MaxUint64 {
		return 0, kindf(ErrTooLarge, "store: %s: sequence numbers exhausted", op)
	}
	seq = st.last + 1
	err = s.update(func(txn *badger.Txn) error {
		return txn.Set(logKey(prefix, seq), data)
	})
	if err != nil {
		return 0, wrapErr(op, err)
	}
	st.last = seq
	return seq, nil
}

// lastLogSeq returns the highest sequence number stored under prefix, or 0
// if the stream is empty.
func (s *Store) lastLogSeq(prefix []byte) (uint64, error) {
	var last uint64
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(logKey(prefix, math.MaxUint64)); it.ValidForPrefix(prefix); it.Next() {
			if seq, ok := logSeq(prefix, it.Item().Key()); ok {
				last = seq
				return nil
			}
		}
		return nil
	})
	return last, err
}

// ReadLog returns the chunks of stream with sequence numbers >= from, in
// order, up to maxBytes of data in total (DefaultLogReadBytes if maxBytes
// is not positive, clamped to MaxLogReadBytes). At least one chunk is
// returned when one is available, even if it alone exceeds maxBytes. next
// is the sequence number to pass as from to continue reading: one past
// the last returned chunk, or from itself when nothing was returned.
func (s *Store) ReadLog(stream string, from uint64, maxBytes int) (chunks []LogChunk, next uint64, err error) {
	op := "read log " + stream
	if err := checkStream(op, stream); err != nil {
		return nil, from, err
	}
	budget := maxBytes
	switch {
	case budget <= 0:
		budget = DefaultLogReadBytes
	case budget > MaxLogReadBytes:
		budget = MaxLogReadBytes
	}
	if err := s.enter(op); err != nil {
		return nil, from, err
	}
	defer s.leave()

	prefix := logPrefix(stream)
	next = from
	used := 0
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{
			Prefix:         prefix,
			PrefetchValues: true,
			PrefetchSize:   16,
		})
		defer it.Close()
		for it.Seek(logKey(prefix, from)); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			seq, ok := logSeq(prefix, item.Key())
			if !ok {
				continue
			}
			data, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if len(chunks) > 0 && used+len(data) > budget {
				return nil
			}
			chunks = append(chunks, LogChunk{Seq: seq, Data: data})
			used += len(data)
			next = seq + 1
		}
		return nil
	})
	if err != nil {
		return nil, from, wrapErr(op, err)
	}
	return chunks, next, nil
}

// DeleteLog removes every chunk of stream. A later AppendLog starts the
// stream again at sequence 1. Deleting a missing stream is not an error.
func (s *Store) DeleteLog(stream string) error {
	op := "delete log " + stream
	if err := checkStream(op, stream); err != nil {
		return err
	}
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()

	st := s.streams.lock(stream)
	defer st.mu.Unlock()
	prefix := logPrefix(stream)
	// Delete in bounded transactions so a long stream never exceeds
	// badger's per-transaction limit.
	const perTxn = 1000
	for {
		var keys [][]byte
		err := s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(prefix); it.ValidForPrefix(prefix) && len(keys) < perTxn; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil {
			return wrapErr(op, err)
		}
		if len(keys) == 0 {
			break
		}
		err = s.update(func(txn *badger.Txn) error {
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return wrapErr(op, err)
		}
	}
	st.last, st.loaded = 0, true
	s.streams.drop(stream, st)
	return nil
}

// recoverSeq reads a stream's last sequence number from disk the first
// time the stream is appended to; st.mu must be held.
func (s *Store) recoverSeq(st *streamState, prefix []byte) error {
	if st.loaded {
		return nil
	}
	last, err := s.lastLogSeq(prefix)
	if err != nil {
		return err
	}
	st.last, st.loaded = last, true
	return nil
}
