package store

import (
	"sync"

	badger "github.com/dgraph-io/badger/v4"
)

// Store is a node's embedded database. It is safe for concurrent use by
// multiple goroutines. Create one with Open and release it with Close.
type Store struct {
	db       *badger.DB
	dir      string // as passed to Open; "" in memory
	inMemory bool

	// Lifecycle: operations register in inflight so Close can wait for
	// them; once closed is set, new operations fail with ErrClosed.
	mu       sync.Mutex
	drained  *sync.Cond
	inflight int
	closed   bool

	keys    keyLocks    // serialises Update calls on the same key
	streams streamTable // per-stream log sequence state
	space   *spaceGate  // nil in memory
}

// Open opens (creating if needed) the database in dir. With InMemory the
// directory is ignored and nothing is written to disk.
//
// If another agora node (another process, or another Store in this
// process) holds the directory, Open returns an error matching ErrLocked.
// Any other failure is returned as "store: open <dir>: ...".
func Open(dir string, opts ...Option) (*Store, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if !c.inMemory {
		if dir == "" {
			return nil, kindf(ErrInvalid, "store: open: empty data dir")
		}
		if locked, cause := probeLock(dir); locked {
			return nil, lockedError(dir, cause)
		}
	} else {
		dir = ""
	}

	db, err := badger.Open(badgerOptions(dir, c))
	if err != nil {
		if !c.inMemory && isBadgerLockError(err) {
			return nil, lockedError(dir, err)
		}
		name := dir
		if c.inMemory {
			name = "(in memory)"
		}
		return nil, wrapErr("open "+name, err)
	}
	s := &Store{db: db, dir: dir, inMemory: c.inMemory}
	if !c.inMemory {
		s.space = &spaceGate{dir: dir}
	}
	s.drained = sync.NewCond(&s.mu)
	s.keys.init()
	s.streams.init()
	return s, nil
}

// Close waits for in-flight operations to finish, then closes the
// database. Operations started after Close began fail with ErrClosed.
// Close is idempotent; later calls return nil. It must not be called from
// inside a callback passed to the store (Scan, Update, Batch), which would
// wait for itself.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for s.inflight > 0 {
		s.drained.Wait()
	}
	s.mu.Unlock()
	return wrapErr("close", s.db.Close())
}

// enter registers an operation; it fails with ErrClosed once Close began.
// Every successful enter must be paired with leave.
func (s *Store) enter(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return kindf(ErrClosed, "store: %s: store is closed", op)
	}
	s.inflight++
	return nil
}

// leave unregisters an operation started with enter.
func (s *Store) leave() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 && s.closed {
		s.drained.Broadcast()
	}
	s.mu.Unlock()
}
