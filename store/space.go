package store

import (
	"errors"

	"fmt"
	"sync"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// ErrNoSpace is a write refused because the data directory's file system
// is nearly full (Reserve).
var ErrNoSpace = errors.New("store: the data directory's file system is nearly full")

// Reserve is the free space below which the store refuses writes. Badger
// writes its logs into memory-mapped files that are allocated sparsely:
// a write into a page the file system then cannot back kills the process
// (SIGBUS) instead of returning an error. The reserve is badger's
// unbacked room at most: the memtables and one value-log file.
const Reserve = numMemtables*memTableSize + valueLogFileSize + 16<<20

// spaceGate answers whether the store may write, from statfs, looked at
// again at most every spaceCheckEvery.
type spaceGate struct {
	dir     string
	mu      sync.Mutex
	checked time.Time
	err     error
}

const spaceCheckEvery = 50 * time.Millisecond

// statfsFree is the space an unprivileged writer may still use on the file
// system holding dir; a variable for tests.
var statfsFree = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (g *spaceGate) check() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); now.Sub(g.checked) >= spaceCheckEvery {
		g.checked = now
		g.err = nil
		if free, err := statfsFree(g.dir); err == nil && free < Reserve {
			g.err = &kindError{msg: fmt.Sprintf("store: %d MiB free on the file system of %s, under the %d MiB the store keeps to write safely", free>>20, g.dir, Reserve>>20), kind: ErrNoSpace}
		}
	}
	return g.err
}

// Writable says whether the store takes writes now: an error matching
// ErrNoSpace when its file system is nearly full. Every write checks it
// first.
func (s *Store) Writable() error { return s.space.check() }

// update is db.Update once the store may write (Writable).
func (s *Store) update(fn func(txn *badger.Txn) error) error {
	if err := s.Writable(); err != nil {
		return err
	}
	return s.db.Update(fn)
}
