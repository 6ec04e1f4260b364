package store

import "sync"

// keyLocks hands out one mutex per key, created on demand and dropped when
// unused. Bucket.Update holds it so that concurrent updates of one key in
// this process queue up instead of failing on badger conflicts.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

// keyLock is a reference-counted mutex for one key.
type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyLocks) init() {
	k.locks = make(map[string]*keyLock)
}

// lock acquires the mutex of key and returns its release function.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()

	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
