package store

import (
	"encoding/binary"
	"strings"
)

// Key namespaces. Each top-level concern owns a prefix that cannot collide
// with another: bucket names cannot contain '/', and stream names cannot
// contain '\x00'.
const (
	bucketNS = "bkt/"
	metaNS   = "meta/"
	logNS    = "log/"
	blobNS   = "blob/"

	// logSep ends a stream name inside a log key, so stream "a" never
	// sees chunks of stream "a/b" or "ab".
	logSep = '\x00'
)

// checkKey validates a caller-supplied key (bucket key, meta key, blob
// key).
func checkKey(op, key string) error {
	if key == "" {
		return kindf(ErrInvalid, "store: %s: empty key", op)
	}
	if len(key) > MaxKeySize {
		return tooLarge(op, "key", len(key), "MaxKeySize", MaxKeySize)
	}
	return nil
}

// checkStream validates a log stream name.
func checkStream(op, stream string) error {
	if err := checkKey(op, stream); err != nil {
		return err
	}
	if strings.IndexByte(stream, logSep) >= 0 {
		return kindf(ErrInvalid, "store: %s: stream name %q contains a NUL byte", op, stream)
	}
	return nil
}

// logPrefix is the key prefix of every chunk of stream.
func logPrefix(stream string) []byte {
	p := make([]byte, 0, len(logNS)+len(stream)+1)
	p = append(p, logNS...)
	p = append(p, stream...)
	return append(p, logSep)
}

// logKey is the key of chunk seq of the stream whose prefix is prefix.
func logKey(prefix []byte, seq uint64) []byte {
	k := make([]byte, len(prefix), len(prefix)+8)
	copy(k, prefix)
	return binary.BigEndian.AppendUint64(k, seq)
}

// logSeq extracts the sequence number from a log key with the given
// prefix; ok is false for malformed keys.
func logSeq(prefix, key []byte) (uint64, bool) {
	if len(key) != len(prefix)+8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[len(prefix):]), true
}
