package store

import (
	"strings"
)

// lockedError returns the ErrLocked error for dir, keeping cause (badger's
// or the probe's error) in the chain.
func lockedError(dir string, cause error) error {
	return &kindError{
		msg:   "store: data dir " + dir + " is in use by another agora node (lock held)",
		kind:  ErrLocked,
		cause: cause,
	}
}

// isBadgerLockError reports whether an error from badger.Open means that
// the directory lock is held by someone else. Badger flattens the flock
// error into text (y.Wrapf drops the chain outside its debug mode), so the
// check matches the errno when it survives and otherwise badger's
// lock-failure messages on every platform.
func isBadgerLockError(err error) bool {
	if err == nil {
		return false
	}
	if isLockErrno(err) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "cannot acquire directory lock") ||
		strings.Contains(msg, "another process is using this badger database")
}
