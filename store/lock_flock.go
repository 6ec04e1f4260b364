//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"os"
	"syscall"
)

// probeLock reports whether another open file description holds badger's
// flock on dir (another process, or another Store in this process). It
// takes and immediately releases a non-blocking exclusive flock, the same
// lock badger takes, so the answer does not depend on badger's error text.
// A directory that cannot be opened is reported as not locked; badger will
// create it or report the real problem.
func probeLock(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false, nil
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, err
	}
	return false, nil
}

// isLockErrno reports whether err carries flock's "would block" errno.
func isLockErrno(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN)
}
