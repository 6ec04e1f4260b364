package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSnapshotPaths(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"out.bin": "o", "skip.txt": "s", "res/a/r": "r", "res/b": "b", "deep/x/y.txt": "y"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	meta := Meta{Job: "j", Task: "t", Created: time.Now()}
	m, _, err := SnapshotPaths(dir, []string{"res/a", "out.bin", "res", "deep/x/y.txt"}, meta, NewMemStore())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.Entries {
		got = append(got, e.Path)
	}
	if want := "deep deep/x deep/x/y.txt out.bin res res/a res/a/r res/b"; strings.Join(got, " ") != want {
		t.Errorf("entries %q, want %q", strings.Join(got, " "), want)
	}
	if m.TotalBytes != 4 {
		t.Errorf("total bytes %d", m.TotalBytes)
	}
	for _, c := range []struct{ path, want string }{
		{"missing.bin", "missing.bin: not produced"},
		{"out.bin/x", "out.bin is not a directory"},
		{"../x", "not a clean relative path"},
	} {
		_, _, err := SnapshotPaths(dir, []string{c.path}, meta, NewMemStore())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.path, err)
		}
		if c.path != "../x" && !errors.Is(err, ErrNotProduced) {
			t.Errorf("%s: not ErrNotProduced: %v", c.path, err)
		}
	}
	// A symlink output is recorded as a link (one leading outside is
	// skipped, as Snapshot does), never followed.
	m, _, err = SnapshotPaths(dir, []string{"link"}, meta, NewMemStore())
	if err != nil || len(m.Entries) != 0 || len(m.Skipped) != 1 {
		t.Fatalf("symlink output: %+v %v", m, err)
	}
}
