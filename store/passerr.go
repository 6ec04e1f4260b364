package store

import "errors"

// passErr carries an error out of a badger transaction callback that must
// reach the caller unchanged: a caller callback's own error, or an error
// this package already wrapped.
type passErr struct{ err error }

func (p passErr) Error() string { return p.err.Error() }

// finish converts the result of a badger transaction: errors marked with
// passErr are returned as they are, anything else is wrapped for op.
func finish(op string, err error) error {
	var p passErr
	if errors.As(err, &p) {
		return p.err
	}
	return wrapErr(op, err)
}
