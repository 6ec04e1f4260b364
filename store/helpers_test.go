package store

import (
	"os"
	"testing"
)

// openMem opens an in-memory store closed at test cleanup.
func openMem(t *testing.T) *Store {
	t.Helper()
	s, err := Open("", InMemory())
	if err != nil {
		t.Fatalf("Open in memory: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openDisk opens a store in dir; the caller closes it.
func openDisk(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

// eachMode runs fn against an in-memory and an on-disk store.
func eachMode(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Run("memory", func(t *testing.T) {
		fn(t, openMem(t))
	})
	t.Run("disk", func(t *testing.T) {
		s := openDisk(t, t.TempDir())
		t.Cleanup(func() { _ = s.Close() })
		fn(t, s)
	})
}

// record is the value type used by bucket tests.
type record struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// writeFile creates a small regular file at path.
func writeFile(path string) error {
	return os.WriteFile(path, []byte("x"), 0o600)
}
