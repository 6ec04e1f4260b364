package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestOversizeLocalInput (issue 23): a local input over the limit is
// refused before any byte reaches the node; the file is sparse, so the
// test writes nothing.
func TestOversizeLocalInput(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	dir := t.TempDir()
	big := filepath.Join(dir, "huge.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxUploadBytes + 1); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	spec := "name: big\ntasks:\n  - name: a\n    command: \"true\"\n    inputs:\n      - {local: ./small.txt}\n      - {local: ./huge.bin}\n"
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = uploadInputs(newClient(srv.URL), []byte(spec), dir, nil)
	var bad badInput
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "over the limit of 16GiB per input; nothing was uploaded") {
		t.Fatalf("error %v", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the node was sent %d requests", hits.Load())
	}
	// A missing local path is refused the same way, naming it.
	_, err = uploadInputs(newClient(srv.URL), []byte(strings.Replace(spec, "huge.bin", "gone.bin", 1)), dir, nil)
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "gone.bin") || hits.Load() != 0 {
		t.Fatalf("missing input: %v (%d requests)", err, hits.Load())
	}
}
