package workload

import (
	"os"
	"path/filepath"
	"testing"
)

// traceDir finds the shared traces directory: $AGORA_TRACES, or a
// shared/traces directory in this package's directory or any above it.
// It skips the test when there is none.
func traceDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("AGORA_TRACES"); d != "" {
		return d
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		c := filepath.Join(dir, "shared", "traces")
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no shared/traces directory found (set AGORA_TRACES)")
		}
		dir = parent
	}
}

// trace returns the path of a trace file, skipping the test without it.
func trace(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(traceDir(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s not available: %v", name, err)
	}
	return p
}
