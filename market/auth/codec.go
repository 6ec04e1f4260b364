package auth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// writer appends the canonical encoding's fields: uvarints, length-
// prefixed bytes and strings, times as Unix seconds (zero time: 0).
type writer struct{ b []byte }

func (w *writer) uint(v uint64)  { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) byte(v byte)    { w.b = append(w.b, v) }
func (w *writer) bytes(p []byte) { w.uint(uint64(len(p))); w.b = append(w.b, p...) }
func (w *writer) str(s string)   { w.uint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) bool(v bool) {
	if v {
		w.byte(1)
	} else {
		w.byte(0)
	}
}
func (w *writer) int(v int64) { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) time(t time.Time) {
	if t.IsZero() {
		w.int(0)
		return
	}
	w.int(t.Unix())
}
func (w *writer) strs(ss []string) {
	w.uint(uint64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}

// reader reads what writer wrote; the first error sticks and names the
// field.
type reader struct {
	b   []byte
	err error
}

// errTruncated is a field that runs past the end of its input.
var errTruncated = errors.New("truncated")

func (r *reader) fail(what string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %w", what, err)
	}
}

func (r *reader) uint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what, errTruncated)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what, errTruncated)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail(what, errTruncated)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bool(what string) bool {
	switch v := r.byte(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(what, fmt.Errorf("%d is not a boolean", v))
		return false
	}
}

// bytes reads a length-prefixed field of at most max bytes.
func (r *reader) bytes(what string, max int) []byte {
	n := r.uint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(max) {
		r.fail(what, fmt.Errorf("%d bytes, over the limit of %d", n, max))
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail(what, errTruncated)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) str(what string, max int) string { return string(r.bytes(what, max)) }

func (r *reader) time(what string) time.Time {
	s := r.int(what)
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

func (r *reader) strs(what string, maxCount, maxLen int) []string {
	n := r.uint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(maxCount) {
		r.fail(what, fmt.Errorf("%d entries, over the limit of %d", n, maxCount))
		return nil
	}
	var out []string
	for i := range n {
		out = append(out, r.str(fmt.Sprintf("%s[%d]", what, i), maxLen))
	}
	return out
}

// done fails when bytes are left over.
func (r *reader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.fail(what, fmt.Errorf("%d bytes after the end", len(r.b)))
	}
	return r.err
}
