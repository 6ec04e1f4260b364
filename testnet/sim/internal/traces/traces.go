package traces

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir is the traces directory, or "" when there is none.
func Dir() string {
	if d := os.Getenv("AGORA_TRACES"); d != "" {
		return d
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	for {
		c := filepath.Join(dir, "shared", "traces")
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// File is the path of the named trace; it skips the test when the trace
// is not available.
func File(t testing.TB, name string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Skip("no shared/traces directory found (set AGORA_TRACES)")
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s not available: %v", name, err)
	}
	return p
}
