package store

import (
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// Sentinel errors. Errors returned by the store wrap these, so callers
// test them with errors.Is.
var (
	// ErrLocked reports that the data directory is held by another agora
	// node (badger's directory lock).
	ErrLocked = errors.New("store: data dir is in use by another agora node")

	// ErrClosed reports an operation on a closed (or closing) store.
	ErrClosed = errors.New("store: closed")

	// ErrTooLarge reports that a key, value, blob, log chunk, list or
	// transaction exceeds one of the package's size limits.
	ErrTooLarge = errors.New("store: size limit exceeded")

	// ErrInvalid reports an invalid argument such as an empty key or a
	// key containing a forbidden byte.
	ErrInvalid = errors.New("store: invalid argument")

	// ErrConflict reports that an atomic update kept conflicting with
	// concurrent writers and was abandoned after a bounded number of
	// attempts.
	ErrConflict = errors.New("store: transaction conflict")
)

// kindError is an error with its own message that matches a sentinel kind
// (and optionally an underlying cause) under errors.Is and errors.As.
type kindError struct {
	msg   string
	kind  error
	cause error
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// kindf returns an error whose message is the formatted text and which
// matches kind under errors.Is.
func kindf(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// tooLarge returns an ErrTooLarge error naming the exceeded limit.
func tooLarge(op, what string, size int, limitName string, limit int) error {
	return kindf(ErrTooLarge, "store: %s: %s is %d bytes, exceeds %s (%d bytes)",
		op, what, size, limitName, limit)
}

// wrapErr prefixes err with "store: op:" and maps badger's sentinel errors
// to this package's, so badger types never escape the package.
func wrapErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrDBClosed):
		return &kindError{msg: "store: " + op + ": store is closed", kind: ErrClosed, cause: err}
	case errors.Is(err, badger.ErrTxnTooBig):
		return &kindError{
			msg:  "store: " + op + ": transaction exceeds badger's batch size limit (15% of the memtable)",
			kind: ErrTooLarge, cause: err,
		}
	case errors.Is(err, badger.ErrConflict):
		return &kindError{msg: "store: " + op + ": " + err.Error(), kind: ErrConflict, cause: err}
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
