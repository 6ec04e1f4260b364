package store

import (
	"errors"
	"math"
	"slices"

	badger "github.com/dgraph-io/badger/v4"
)

// Group commit. A node's event loop produces many small writes per turn
// (job records, event lines); committing each on its own pays badger's
// write pipeline (a hand-off to its writer goroutine and back) per write.
// PutAll and AppendLogs commit a turn's writes together, in as few
// transactions as badger's size limit allows.

// splitWriter sets keys in a write transaction and, when the transaction
// is full, commits it and continues in a new one.
type splitWriter struct {
	db  *badger.DB
	txn *badger.Txn
	n   int // writes in txn
}

func newSplitWriter(db *badger.DB) *splitWriter {
	return &splitWriter{db: db, txn: db.NewTransaction(true)}
}

// set adds one write; committed reports whether the writes before it were
// committed to make room (so that callers can publish their effects).
func (w *splitWriter) set(key, val []byte) (committed bool, err error) {
	err = w.txn.Set(key, val)
	if errors.Is(err, badger.ErrTxnTooBig) && w.n > 0 {
		if err = w.commit(); err != nil {
			return false, err
		}
		committed = true
		err = w.txn.Set(key, val)
	}
	if err == nil {
		w.n++
	}
	return committed, err
}

// commit commits the current transaction (if it holds writes) and opens a
// new one.
func (w *splitWriter) commit() error {
	var err error
	if w.n > 0 {
		err = w.txn.Commit()
	}
	w.txn.Discard()
	w.txn, w.n = w.db.NewTransaction(true), 0
	return err
}

func (w *splitWriter) discard() { w.txn.Discard() }

// PutAll stores every entry, like Put for each in order, but commits them
// together: in one transaction when they fit in badger's limit, else in
// as few consecutive ones as needed (so the set as a whole is not atomic,
// while each entry is). An entry that cannot be stored (invalid key,
// oversized value) is skipped and its error returned, after the others
// were written; a commit error stops the writes and is returned.
func (b *Bucket[T]) PutAll(entries []Entry[T]) error {
	op := "put all " + b.name
	if len(entries) == 0 {
		return nil
	}
	if err := b.s.enter(op); err != nil {
		return err
	}
	defer b.s.leave()
	// In a bucket that allows large values (large.go), hold the entries'
	// key locks, write each large value's parts before the values, and
	// drop, after the commit, the parts the new values no longer name:
	// keep is the generation each key's new value names (0: none).
	var keep map[string]uint64
	if b.large > 0 {
		keep = map[string]uint64{}
		keys := make([]string, 0, len(entries))
		for _, e := range entries {
			keys = append(keys, string(b.key(e.Key)))
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			defer b.s.keys.lock(k)()
		}
	}
	var first error
	if err := b.s.Writable(); err != nil {
		return err
	}
	w := newSplitWriter(b.s.db)
	defer w.discard()
	for _, e := range entries {
		eop := b.op("put", e.Key)
		if err := checkKey(eop, e.Key); err != nil {
			first = cmp(first, err)
			continue
		}
		data, err := b.encodeFor(eop, e.Value)
		if err != nil {
			first = cmp(first, err)
			continue
		}
		if keep != nil {
			keep[e.Key] = 0
			if len(data) > MaxValueSize {
				st, err := b.writeParts(e.Key, data)
				if err != nil {
					return wrapErr(eop, err)
				}
				data, keep[e.Key] = st.encode(), st.gen
			}
		}
		if _, err := w.set(b.key(e.Key), data); err != nil {
			return wrapErr(eop, err)
		}
	}
	if err := w.commit(); err != nil {
		return wrapErr(op+" commit", err)
	}
	for k, g := range keep {
		if err := b.dropParts(k, g); err != nil {
			return wrapErr(b.op("put", k)+": drop old parts", err)
		}
	}
	return first
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// LogAppend is one chunk for AppendLogs.
type LogAppend struct {
	// Stream is the log stream (see AppendLog for valid names).
	Stream string
	// Data is the chunk, 1 to MaxLogChunkSize bytes.
	Data []byte
}

// AppendLogs appends every chunk to its stream in order, as AppendLog
// would one after the other, and commits them together: in one
// transaction when they fit in badger's limit, else in as few
// consecutive ones as needed. Sequence numbers stay gap-free per stream.
// A chunk that is invalid (bad stream name, empty or oversized data) is
// skipped and its error returned after the others were written; a commit
// error stops the appends and is returned.
func (s *Store) AppendLogs(chunks []LogAppend) error {
	const op = "append logs"
	if len(chunks) == 0 {
		return nil
	}
	var first error
	valid := make([]bool, len(chunks))
	var names []string
	for i, c := range chunks {
		cop := "append log " + c.Stream
		switch err := checkStream(cop, c.Stream); {
		case err != nil:
			first = cmp(first, err)
			continue
		case len(c.Data) == 0:
			first = cmp(first, kindf(ErrInvalid, "store: %s: empty chunk", cop))
			continue
		case len(c.Data) > MaxLogChunkSize:
			first = cmp(first, tooLarge(cop, "chunk", len(c.Data), "MaxLogChunkSize", MaxLogChunkSize))
			continue
		}
		valid[i] = true
		names = append(names, c.Stream)
	}
	if len(names) == 0 {
		return first
	}
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()

	// Lock the streams in name order (AppendLog and DeleteLog hold one
	// at a time, so no lock order can deadlock), recover their
	// sequences, then write.
	slices.Sort(names)
	names = slices.Compact(names)
	type stream struct {
		st     *streamState
		prefix []byte
		next   uint64 // last sequence number written, committed or not
	}
	streams := make(map[string]*stream, len(names))
	for _, name := range names {
		st := s.streams.lock(name)
		defer st.mu.Unlock()
		prefix := logPrefix(name)
		if err := s.recoverSeq(st, prefix); err != nil {
			return wrapErr("append log "+name+": recover sequence", err)
		}
		streams[name] = &stream{st: st, prefix: prefix, next: st.last}
	}
	// publish makes committed sequence numbers visible to later appends.
	publish := func() {
		for _, x := range streams {
			x.st.last = x.next
		}
	}
	if err := s.Writable(); err != nil {
		return err
	}
	w := newSplitWriter(s.db)
	defer w.discard()
	for i, c := range chunks {
		if !valid[i] {
			continue
		}
		x := streams[c.Stream]
		if x.next == math.MaxUint64 {
			first = cmp(first, kindf(ErrTooLarge, "store: append log %s: sequence numbers exhausted", c.Stream))
			continue
		}
		committed, err := w.set(logKey(x.prefix, x.next+1), c.Data)
		if committed {
			// The chunks before this one are durable now (x.next does
			// not count this one yet).
			publish()
		}
		if err != nil {
			return wrapErr("append log "+c.Stream, err)
		}
		x.next++
	}
	if err := w.commit(); err != nil {
		return wrapErr(op+" commit", err)
	}
	publish()
	return first
}
