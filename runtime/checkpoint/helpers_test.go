package checkpoint

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// randBytes returns n pseudo-random bytes determined by seed.
func randBytes(seed uint64, n int) []byte {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// testMeta returns a valid Meta with the given sequence number.
func testMeta(seq uint64) Meta {
	return Meta{Job: "job-1", Task: "train", Replica: 0, Epoch: 3, Seq: seq,
		Created: time.Unix(1_700_000_000, int64(seq))}
}

// node describes one path of a test tree.
type node struct {
	path   string
	mode   fs.FileMode // permission bits; dirs default 0o755, files 0o644
	data   []byte      // file contents (files only)
	target string      // symlink target; makes the node a symlink
	dir    bool
}

// writeTree creates nodes under dir in order, then sets each file's and
// directory's mtime to a fixed, distinct time, deepest first.
func writeTree(t *testing.T, dir string, nodes []node) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(dir, filepath.FromSlash(n.path))
		var err error
		switch {
		case n.target != "":
			err = os.Symlink(n.target, p)
		case n.dir:
			err = os.Mkdir(p, 0o755)
		default:
			err = os.WriteFile(p, n.data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.target != "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(n.path))
		mt := time.Unix(1_600_000_000+int64(i)*1000, int64(i)*1_000_001)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		if n.mode != 0 {
			if err := os.Chmod(p, n.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	makeRemovable(t, dir)
}

// makeRemovable restores write permission under dir at cleanup, so
// t.TempDir can remove trees with read-only directories.
func makeRemovable(t *testing.T, dir string) {
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// treeState describes a tree for comparison: one line per path with type,
// mode, mtime and content hash or target.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var desc strings.Builder
		desc.WriteString(info.Mode().String())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc.WriteString(" -> " + target)
		case info.IsDir():
			desc.WriteString(" " + info.ModTime().UTC().Format(time.RFC3339Nano))
		default:
			data, err := readAsOwner(p, info.Mode())
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(&desc, " %s %d %x", info.ModTime().UTC().Format(time.RFC3339Nano), len(data), sum[:8])
		}
		state[filepath.ToSlash(rel)] = desc.String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// readAsOwner reads a file even if its mode forbids it (tests may not run
// as root), restoring the mode and mtime afterwards.
func readAsOwner(p string, mode fs.FileMode) ([]byte, error) {
	if mode&0o400 != 0 {
		return os.ReadFile(p)
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(p, 0o600); err != nil {
		return nil, err
	}
	defer os.Chtimes(p, info.ModTime(), info.ModTime())
	defer os.Chmod(p, mode)
	return os.ReadFile(p)
}

// sameTree fails the test if the trees under a and b differ.
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	sa, sb := treeState(t, a), treeState(t, b)
	for p, da := range sa {
		if db, ok := sb[p]; !ok {
			t.Errorf("%s: in %s only", p, a)
		} else if da != db {
			t.Errorf("%s: %q vs %q", p, da, db)
		}
	}
	for p := range sb {
		if _, ok := sa[p]; !ok {
			t.Errorf("%s: in %s only", p, b)
		}
	}
}

// fileData reads the restored file at rel under dir.
func fileData(t *testing.T, dir, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// mustSnapshot takes a snapshot and fails the test on error.
func mustSnapshot(t *testing.T, dir string, seq uint64, cs ChunkStore) (Manifest, SnapshotStats) {
	t.Helper()
	m, st, err := Snapshot(dir, testMeta(seq), cs)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return m, st
}

// entry returns the manifest entry at path p.
func entry(t *testing.T, m Manifest, p string) Entry {
	t.Helper()
	for _, e := range m.Entries {
		if e.Path == p {
			return e
		}
	}
	t.Fatalf("no entry %q in manifest", p)
	return Entry{}
}
