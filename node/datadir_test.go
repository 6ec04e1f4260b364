package node

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora-sched/agora/store"
)

// TestDataDirInUse: a second node on a running node's data dir fails with
// a configuration error that names the dir and wraps store.ErrLocked, so
// that callers (the testnet's restarts) can tell it from other failures.
func TestDataDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := Config{DataDir: dir, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, API: "127.0.0.1:0", DisableNVML: true}
	first, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Kill)
	_, err = New(context.Background(), cfg)
	if err == nil {
		t.Fatal("a second node opened a data dir in use")
	}
	if !IsConfigError(err) || !errors.Is(err, store.ErrLocked) {
		t.Fatalf("error %v: config error %v, wraps store.ErrLocked %v", err, IsConfigError(err), errors.Is(err, store.ErrLocked))
	}
	if want := "data dir " + dir + " is in use by another running agora node"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want it to say %q", err, want)
	}
}
