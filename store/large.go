package store

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Large values. A bucket made with AllowLarge stores a value whose encoding
// exceeds MaxValueSize in parts of at most MaxValueSize bytes, each in a
// transaction of its own (badger bounds a transaction to about 1.2 MiB),
// under keys of their own outside every bucket's range, and then, in one
// more transaction, a small stub under the value's key that names the
// parts' generation. Readers find the stub and read the parts from the same
// snapshot. A generation's parts are written before its stub and deleted
// only after a newer value replaced the stub, so a reader never sees a
// value half written, and a crash between the parts and the stub leaves
// the old value (and parts nobody names, deleted by the next write or
// delete of the key). Writes and deletes of one key hold its key lock, so
// that one write cannot delete the parts another is naming.

const (
	partNS = "part/"
	// stubMark starts a stub: no JSON value starts with a NUL byte, and
	// WithCodec refuses a codec output that does.
	stubMark = 0x00
)

// partGen numbers generations of parts; it starts from the clock so that
// a restarted store does not reuse a generation still on disk.
var partGen atomic.Uint64

func init() { partGen.Store(uint64(time.Now().UnixNano())) }

// AllowLarge lets the bucket store values whose encoding is up to max
// bytes (more than MaxValueSize) through Put, PutAll, Get, Scan, List and
// Delete. Update and batches refuse such a bucket altogether (ErrInvalid).
// It returns b.
func (b *Bucket[T]) AllowLarge(max int) *Bucket[T] {
	b.large = max
	return b
}

// partPrefix is the key prefix of every part of key, all generations.
func (b *Bucket[T]) partPrefix(key string) []byte {
	p := make([]byte, 0, len(partNS)+len(b.name)+1+4+len(key))
	p = append(p, partNS...)
	p = append(p, b.name...)
	p = append(p, '/')
	p = binary.BigEndian.AppendUint32(p, uint32(len(key)))
	return append(p, key...)
}

func partKey(prefix []byte, gen uint64, i int) []byte {
	k := slices.Clip(prefix)
	k = binary.BigEndian.AppendUint64(k, gen)
	return binary.BigEndian.AppendUint32(k, uint32(i))
}

// stub is the value stored under a large value's key.
type stub struct {
	gen   uint64
	parts int
	size  int
}

func (s stub) encode() []byte {
	b := []byte{stubMark}
	b = binary.AppendUvarint(b, s.gen)
	b = binary.AppendUvarint(b, uint64(s.parts))
	return binary.AppendUvarint(b, uint64(s.size))
}

func decodeStub(b []byte) (stub, bool) {
	if len(b) == 0 || b[0] != stubMark {
		return stub{}, false
	}
	b = b[1:]
	var v [3]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return stub{}, false
		}
		v[i], b = x, b[n:]
	}
	if len(b) != 0 || v[1] == 0 || v[1] > 1<<20 || v[2] > 1<<40 {
		return stub{}, false
	}
	return stub{gen: v[0], parts: int(v[1]), size: int(v[2])}, true
}

// decodeValue unmarshals item's value into a fresh T, reading it from
// its parts, in txn's snapshot, when it is a stub.
func (b *Bucket[T]) decodeValue(txn *badger.Txn, op string, item *badger.Item) (T, error) {
	var v T
	var st stub
	isStub := false
	err := item.Value(func(data []byte) error {
		if st, isStub = decodeStub(data); isStub {
			return nil
		}
		return b.unmarshal(data, &v)
	})
	if err == nil && isStub {
		var data []byte
		if data, err = b.readParts(txn, item.Key()[len(b.prefix):], st); err == nil {
			err = b.unmarshal(data, &v)
		}
	}
	if err != nil {
		return v, wrapErr(op+": decode", err)
	}
	return v, nil
}

// readParts reads the parts a stub names.
func (b *Bucket[T]) readParts(txn *badger.Txn, key []byte, st stub) ([]byte, error) {
	prefix := b.partPrefix(string(key))
	out := make([]byte, 0, st.size)
	for i := range st.parts {
		item, err := txn.Get(partKey(prefix, st.gen, i))
		if err != nil {
			return nil, fmt.Errorf("part %d of %d: %w", i+1, st.parts, err)
		}
		if err := item.Value(func(p []byte) error { out = append(out, p...); return nil }); err != nil {
			return nil, err
		}
	}
	if len(out) != st.size {
		return nil, fmt.Errorf("parts hold %d bytes, their stub says %d", len(out), st.size)
	}
	return out, nil
}

// encodeFor encodes v for b, enforcing MaxValueSize or, for a bucket that
// allows large values, its own limit.
func (b *Bucket[T]) encodeFor(op string, v T) ([]byte, error) {
	if b.large <= MaxValueSize {
		return b.encode(op, v)
	}
	data, err := b.marshal(v)
	if err != nil {
		return nil, wrapErr(op+": encode", err)
	}
	if len(data) > b.large {
		return nil, tooLarge(op, "encoded value", len(data), "the bucket's large-value limit", b.large)
	}
	return data, nil
}

// writeParts stores data in parts under a new generation and returns the
// stub that names them.
func (b *Bucket[T]) writeParts(key string, data []byte) (stub, error) {
	st := stub{gen: partGen.Add(1), size: len(data)}
	prefix := b.partPrefix(key)
	for off := 0; off < len(data); off += MaxValueSize {
		part := data[off:min(off+MaxValueSize, len(data))]
		k := partKey(prefix, st.gen, st.parts)
		if err := b.s.update(func(txn *badger.Txn) error { return txn.Set(k, part) }); err != nil {
			return st, err
		}
		st.parts++
	}
	return st, nil
}

// dropParts deletes every part of key except generation keep's (0: all).
func (b *Bucket[T]) dropParts(key string, keep uint64) error {
	prefix := b.partPrefix(key)
	for {
		var keys [][]byte
		err := b.s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(prefix); it.ValidForPrefix(prefix) && len(keys) < 256; it.Next() {
				k := it.Item().Key()
				if keep != 0 && len(k) == len(prefix)+12 && binary.BigEndian.Uint64(k[len(prefix):]) == keep {
					continue
				}
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = b.s.update(func(txn *badger.Txn) error {
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// errLargeBucket is the error of operations a large-value bucket does not
// support.
func errLargeBucket(op string) error {
	return kindf(ErrInvalid, "store: %s: not supported on a bucket that allows large values", op)
}
