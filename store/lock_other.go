//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

// probeLock has no flock to probe on this platform; Open relies on
// recognising badger's own lock error instead.
func probeLock(string) (bool, error) {
	return false, nil
}

// isLockErrno reports false: there is no flock errno on this platform.
func isLockErrno(error) bool {
	return false
}
