package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Bucket is a typed key/value namespace inside a Store. Values are stored
// JSON-encoded, or in the bucket's own encoding (WithCodec); keys are
// ordered byte-wise. A Bucket is safe for
// concurrent use and cheap to create; buckets with the same name on the
// same Store share their data.
type Bucket[T any] struct {
	s      *Store
	name   string
	prefix string // bucketNS + name + "/"
	large  int    // AllowLarge's limit; 0: MaxValueSize applies
	enc    func(T) ([]byte, error)
	dec    func([]byte, *T) error
}

// Entry is one key/value pair returned by Bucket.List.
type Entry[T any] struct {
	// Key is the key within the bucket (without the bucket name).
	Key string
	// Value is the decoded value.
	Value T
}

// NewBucket returns the bucket called name in s. The name becomes the key
// prefix "name/", so names must be non-empty, at most MaxKeySize bytes and
// must not contain '/'; violating that is a programming error and panics.
func NewBucket[T any](s *Store, name string) *Bucket[T] {
	if s == nil {
		panic("store: NewBucket: nil store")
	}
	if name == "" || strings.Contains(name, "/") || len(name) > MaxKeySize {
		panic("store: NewBucket: invalid bucket name " + `"` + name + `"` +
			" (must be non-empty, short and contain no '/')")
	}
	return &Bucket[T]{s: s, name: name, prefix: bucketNS + name + "/"}
}

// Name returns the bucket's name.
func (b *Bucket[T]) Name() string { return b.name }

// key returns the badger key of a bucket key.
func (b *Bucket[T]) key(key string) []byte {
	return []byte(b.prefix + key)
}

// op names an operation on key for error messages.
func (b *Bucket[T]) op(verb, key string) string {
	return verb + " " + b.name + "/" + key
}

// WithCodec makes the bucket store its values as enc encodes them and read
// them with dec, instead of as JSON: for a type written often enough that
// JSON's size and time matter. dec must read whatever the bucket holds,
// values stored as JSON before the codec was set included, and must copy
// what it keeps of its input. enc's output must not start with a NUL
// byte, which marks a large value's stub (AllowLarge); such a value is
// refused. It returns b.
func (b *Bucket[T]) WithCodec(enc func(T) ([]byte, error), dec func([]byte, *T) error) *Bucket[T] {
	b.enc, b.dec = enc, dec
	return b
}

// marshal encodes v in the bucket's encoding.
func (b *Bucket[T]) marshal(v T) ([]byte, error) {
	if b.enc == nil {
		return json.Marshal(v)
	}
	data, err := b.enc(v)
	if err == nil && len(data) > 0 && data[0] == stubMark {
		err = errors.New("codec output starts with a NUL byte")
	}
	return data, err
}

// unmarshal decodes data, in the bucket's encoding, into v.
func (b *Bucket[T]) unmarshal(data []byte, v *T) error {
	if b.dec == nil {
		return json.Unmarshal(data, v)
	}
	return b.dec(data, v)
}

// encode marshals v and enforces MaxValueSize.
func (b *Bucket[T]) encode(op string, v T) ([]byte, error) {
	data, err := b.marshal(v)
	if err != nil {
		return nil, wrapErr(op+": encode", err)
	}
	if len(data) > MaxValueSize {
		return nil, tooLarge(op, "encoded value", len(data), "MaxValueSize", MaxValueSize)
	}
	return data, nil
}

// Put stores v under key, replacing any previous value.
func (b *Bucket[T]) Put(key string, v T) error {
	op := b.op("put", key)
	if err := checkKey(op, key); err != nil {
		return err
	}
	if b.large > 0 {
		return b.PutAll([]Entry[T]{{Key: key, Value: v}}) // parts, locks and all
	}
	data, err := b.encode(op, v)
	if err != nil {
		return err
	}
	if err := b.s.enter(op); err != nil {
		return err
	}
	defer b.s.leave()
	return wrapErr(op, b.s.update(func(txn *badger.Txn) error {
		return txn.Set(b.key(key), data)
	}))
}

// Get returns the value stored under key; ok is false if there is none.
func (b *Bucket[T]) Get(key string) (v T, ok bool, err error) {
	op := b.op("get", key)
	if err := checkKey(op, key); err != nil {
		return v, false, err
	}
	if err := b.s.enter(op); err != nil {
		return v, false, err
	}
	defer b.s.leave()
	err = b.s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(b.key(key))
		if err != nil {
			return err
		}
		v, err = b.decodeValue(txn, op, item)
		if err != nil {
			return passErr{err}
		}
		ok = true
		return nil
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return v, false, nil
	case err != nil:
		return v, false, finish(op, err)
	}
	return v, ok, nil
}

// Delete removes key; deleting a missing key is not an error.
func (b *Bucket[T]) Delete(key string) error {
	op := b.op("delete", key)
	if err := checkKey(op, key); err != nil {
		return err
	}
	if err := b.s.enter(op); err != nil {
		return err
	}
	defer b.s.leave()
	if b.large > 0 {
		defer b.s.keys.lock(string(b.key(key)))()
	}
	err := b.s.update(func(txn *badger.Txn) error {
		return txn.Delete(b.key(key))
	})
	if err == nil && b.large > 0 {
		err = b.dropParts(key, 0)
	}
	return wrapErr(op, err)
}

// Scan calls fn for every key starting with prefix, in key order, from one
// consistent snapshot. It stops early when fn returns false or an error;
// fn's error is returned unchanged. fn may read and write the store but
// must not call Close.
func (b *Bucket[T]) Scan(prefix string, fn func(key string, v T) (bool, error)) error {
	return b.ScanFrom(prefix, "", fn)
}

// ScanFrom is Scan from the first key at or after prefix+start: a range
// read that starts in the middle of a prefix (a time-ordered bucket read
// from a time on) without decoding what comes before.
func (b *Bucket[T]) ScanFrom(prefix, start string, fn func(key string, v T) (bool, error)) error {
	op := b.op("scan", prefix+"*")
	if len(prefix) > MaxKeySize {
		return tooLarge(op, "prefix", len(prefix), "MaxKeySize", MaxKeySize)
	}
	if err := b.s.enter(op); err != nil {
		return err
	}
	defer b.s.leave()
	full := b.key(prefix)
	err := b.s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{
			Prefix:         full,
			PrefetchValues: true,
			PrefetchSize:   16,
		})
		defer it.Close()
		for it.Seek(b.key(prefix + start)); it.ValidForPrefix(full); it.Next() {
			item := it.Item()
			key := string(item.Key()[len(b.prefix):])
			v, err := b.decodeValue(txn, b.op("scan", key), item)
			if err != nil {
				return passErr{err}
			}
			more, err := fn(key, v)
			if err != nil {
				return passErr{err}
			}
			if !more {
				return nil
			}
		}
		return nil
	})
	return finish(op, err)
}

// List returns every entry whose key starts with prefix, in key order. It
// fails with ErrTooLarge beyond MaxListEntries entries; use Scan for
// larger ranges.
func (b *Bucket[T]) List(prefix string) ([]Entry[T], error) {
	var out []Entry[T]
	err := b.Scan(prefix, func(key string, v T) (bool, error) {
		if len(out) == listLimit {
			return false, kindf(ErrTooLarge, "store: list %s/%s*: more than MaxListEntries (%d) entries; use Scan",
				b.name, prefix, listLimit)
		}
		out = append(out, Entry[T]{Key: key, Value: v})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Count returns the number of keys starting with prefix. It reads keys
// only, not values.
func (b *Bucket[T]) Count(prefix string) (int, error) {
	op := b.op("count", prefix+"*")
	if len(prefix) > MaxKeySize {
		return 0, tooLarge(op, "prefix", len(prefix), "MaxKeySize", MaxKeySize)
	}
	if err := b.s.enter(op); err != nil {
		return 0, err
	}
	defer b.s.leave()
	full := b.key(prefix)
	n := 0
	err := b.s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: full})
		defer it.Close()
		for it.Seek(full); it.ValidForPrefix(full); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, wrapErr(op, err)
	}
	return n, nil
}

// Update atomically reads, modifies and writes key in one transaction.
// fn receives a pointer to the current value (the zero value if the key
// does not exist) and whether it exists. If fn returns keep=true the value
// *v is written; keep=false deletes the key (a no-op if it did not exist).
// If fn returns an error nothing is written and that error is returned
// unchanged.
//
// Concurrent Updates of the same key in this process are serialised. If
// the transaction still conflicts with another writer (Put, Delete, Batch)
// it is retried with fresh data a bounded number of times, so fn may run
// more than once and must not have side effects; when retries run out the
// error matches ErrConflict. fn must not Update the same key (it would
// deadlock) and must not call Close.
func (b *Bucket[T]) Update(key string, fn func(v *T, exists bool) (keep bool, err error)) error {
	op := b.op("update", key)
	if err := checkKey(op, key); err != nil {
		return err
	}
	if b.large > 0 {
		return errLargeBucket(op)
	}
	if err := b.s.enter(op); err != nil {
		return err
	}
	defer b.s.leave()
	k := b.key(key)
	defer b.s.keys.lock(string(k))()

	for attempt := 1; ; attempt++ {
		err := b.s.update(func(txn *badger.Txn) error {
			return b.updateTxn(txn, op, k, fn)
		})
		if !errors.Is(err, badger.ErrConflict) {
			return finish(op, err)
		}
		if attempt == maxUpdateAttempts {
			return &kindError{
				msg:   fmt.Sprintf("store: %s: gave up after %d conflicting attempts", op, attempt),
				kind:  ErrConflict,
				cause: err,
			}
		}
		// Jittered, linearly growing backoff (at most a few ms).
		time.Sleep(time.Duration(rand.N(attempt*250)) * time.Microsecond)
	}
}

// updateTxn is one attempt of Update inside a read-write transaction.
func (b *Bucket[T]) updateTxn(txn *badger.Txn, op string, k []byte,
	fn func(v *T, exists bool) (bool, error)) error {
	var v T
	exists := false
	item, err := txn.Get(k)
	switch {
	case err == nil:
		if v, err = b.decodeValue(txn, op, item); err != nil {
			return passErr{err}
		}
		exists = true
	case !errors.Is(err, badger.ErrKeyNotFound):
		return err
	}
	keep, err := fn(&v, exists)
	if err != nil {
		return passErr{err}
	}
	if !keep {
		if !exists {
			return nil
		}
		return txn.Delete(k)
	}
	data, err := b.encode(op, v)
	if err != nil {
		return passErr{err}
	}
	return txn.Set(k, data)
}
