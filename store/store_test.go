package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

func TestOpenLockedDirReturnsErrLocked(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	defer s.Close()

	s2, err := Open(dir)
	if err == nil {
		s2.Close()
		t.Fatal("second Open of a held dir succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	want := "store: data dir " + dir + " is in use by another agora node (lock held)"
	if err.Error() != want {
		t.Fatalf("message = %q, want %q", err.Error(), want)
	}

	// Once the holder closes, the dir opens again.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s3 := openDisk(t, dir)
	if err := s3.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestBadgerLockErrorDetection(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"unix flock text", errors.New(`Cannot acquire directory lock on "/x".  Another process is using this Badger database. err: resource temporarily unavailable`), true},
		{"windows text", errors.New(`Cannot create lock file "/x/LOCK".  Another process is using this Badger database err: Access is denied.`), true},
		{"unrelated", errors.New("manifest has unsupported version"), false},
		{"permission", errors.New(`cannot open directory "/x" err: permission denied`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isBadgerLockError(tt.err); got != tt.want {
				t.Fatalf("isBadgerLockError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	// The ErrLocked built from a badger error keeps the cause in its chain.
	cause := errors.New("cause")
	err := lockedError("/x", cause)
	if !errors.Is(err, ErrLocked) || !errors.Is(err, cause) {
		t.Fatalf("lockedError chain: %v", err)
	}
}

// TestBadgerLockErrorIsRecognised opens the held directory with badger
// directly (bypassing Open's flock probe) and checks that the fallback
// recognises badger's real lock error.
func TestBadgerLockErrorIsRecognised(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	defer s.Close()
	db, err := badger.Open(badgerOptions(dir, config{}))
	if err == nil {
		db.Close()
		t.Fatal("badger.Open of a held dir succeeded")
	}
	if !isBadgerLockError(err) {
		t.Fatalf("badger lock error not recognised: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open(\"\"): err = %v, want ErrInvalid", err)
	}
	// A regular file where the data dir should be.
	file := filepath.Join(t.TempDir(), "file")
	if err := writeFile(file); err != nil {
		t.Fatal(err)
	}
	_, err := Open(file)
	if err == nil || errors.Is(err, ErrLocked) || !strings.HasPrefix(err.Error(), "store: open "+file+": ") {
		t.Fatalf("Open(file): err = %v, want a \"store: open %s: ...\" error", err, file)
	}
}

func TestPersistenceAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	b := NewBucket[record](s, "jobs")
	if err := b.Put("j1", record{Name: "one", N: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMeta("node-id", "peer-123"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBlob("sha256:abc", []byte("chunk")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDisk(t, dir)
	defer s.Close()
	b = NewBucket[record](s, "jobs")
	got, ok, err := b.Get("j1")
	if err != nil || !ok || got != (record{Name: "one", N: 1}) {
		t.Fatalf("Get after reopen = %+v, %v, %v", got, ok, err)
	}
	if v, ok, err := s.GetMeta("node-id"); err != nil || !ok || v != "peer-123" {
		t.Fatalf("GetMeta after reopen = %q, %v, %v", v, ok, err)
	}
	if data, ok, err := s.GetBlob("sha256:abc"); err != nil || !ok || string(data) != "chunk" {
		t.Fatalf("GetBlob after reopen = %q, %v, %v", data, ok, err)
	}
}

func TestInMemoryIgnoresDirAndIsIsolated(t *testing.T) {
	dir := t.TempDir()
	s1, err := Open(dir, InMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	// A second in-memory store on the "same" dir neither locks nor shares.
	s2, err := Open(dir, InMemory())
	if err != nil {
		t.Fatalf("second in-memory Open: %v", err)
	}
	defer s2.Close()
	if err := s1.PutMeta("k", "v1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s2.GetMeta("k"); ok {
		t.Fatal("in-memory stores share data")
	}
	entries, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(entries) != 0 {
		t.Fatalf("in-memory store wrote files: %v %v", entries, err)
	}
	// The on-disk store can still take the directory.
	s3 := openDisk(t, dir)
	s3.Close()
}

func TestCloseIsIdempotentAndLaterCallsFail(t *testing.T) {
	s, err := Open("", InMemory())
	if err != nil {
		t.Fatal(err)
	}
	b := NewBucket[int](s, "n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checks := map[string]error{
		"Put":     b.Put("k", 1),
		"PutMeta": s.PutMeta("k", "v"),
		"Batch":   s.Batch(func(*Batch) error { return nil }),
		"RunGC":   s.RunGC(),
	}
	_, _, err = b.Get("k")
	checks["Get"] = err
	_, err = s.AppendLog("x", []byte("y"))
	checks["AppendLog"] = err
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
}

func TestCloseWaitsForInflightOperations(t *testing.T) {
	s, err := Open("", InMemory())
	if err != nil {
		t.Fatal(err)
	}
	b := NewBucket[int](s, "n")
	for i := range 10 {
		if err := b.Put(fmt.Sprint(i), i); err != nil {
			t.Fatal(err)
		}
	}
	inScan := make(chan struct{})
	release := make(chan struct{})
	scanErr := make(chan error, 1)
	go func() {
		first := true
		scanErr <- b.Scan("", func(string, int) (bool, error) {
			if first {
				first = false
				close(inScan)
				<-release
			}
			return true, nil
		})
	}()
	<-inScan
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a Scan was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-scanErr; err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestFootprint logs the goroutines one store adds, to keep an eye on the
// per-node cost when tests run dozens of nodes.
func TestFootprint(t *testing.T) {
	before := runtime.NumGoroutine()
	s := openDisk(t, t.TempDir())
	during := runtime.NumGoroutine()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("goroutines per on-disk store: %d", during-before)
	m, err := Open("", InMemory())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("goroutines per in-memory store: %d", runtime.NumGoroutine()-before)
	m.Close()
}
