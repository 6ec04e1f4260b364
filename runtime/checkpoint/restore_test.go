package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestoreReplacesStaleContents(t *testing.T) {
	src, dst, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeTree(t, src, []node{
		{path: "keep", dir: true},
		{path: "keep/state", data: []byte("new state")},
		{path: "was-dir", data: []byte("now a file")},
		{path: "was-file", dir: true},
		{path: "was-file/inner", data: []byte("inner")},
		{path: "was-link", dir: true},
		{path: "was-link/x", data: []byte("must land inside dst")},
		{path: "link", target: "keep/state"},
	})
	// dst holds an older, different tree: stale files and directories
	// (one read-only), type changes, a symlink out of dst where the
	// snapshot has a directory, and a leftover temporary file.
	writeTree(t, dst, []node{
		{path: "keep", dir: true, mode: 0o300}, // unreadable unless root
		{path: "keep/state", data: []byte("old state, longer than the new one")},
		{path: "keep/stale", data: []byte("stale")},
		{path: "stale-dir", dir: true},
		{path: "stale-dir/ro", dir: true, mode: 0o555},
		{path: "stale-dir/ro/f", data: []byte("f")},
		{path: "was-dir", dir: true},
		{path: "was-dir/f", data: []byte("f")},
		{path: "was-file", data: []byte("a file")},
		{path: "was-link", target: outside},
		{path: "link", target: "elsewhere"},
		{path: tmpPrefix + "1-1", data: []byte("left by a crash")},
	})
	cs := NewMemStore()
	m, _ := mustSnapshot(t, src, 1, cs)
	if err := Restore(context.Background(), m, dst, cs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	sameTree(t, src, dst)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("restore wrote outside dst, through a stale symlink: %v", entries)
	}
}

func TestRestoreBadChunks(t *testing.T) {
	src := t.TempDir()
	big := randBytes(6, 1<<20)
	writeTree(t, src, []node{
		{path: "d", dir: true},
		{path: "d/big", data: big},
	})
	cs := NewMemStore()
	m, _ := mustSnapshot(t, src, 1, cs)
	victim := entry(t, m, "d/big").Chunks[1]

	tests := []struct {
		name    string
		damage  func(cs *MemStore)
		wantErr error
	}{
		{"corrupt", func(cs *MemStore) {
			data, _, _ := cs.Get(victim)
			data[len(data)/2] ^= 1
			_ = cs.Put(victim, data)
		}, ErrCorruptChunk},
		{"truncated", func(cs *MemStore) {
			data, _, _ := cs.Get(victim)
			_ = cs.Put(victim, data[:len(data)-1])
		}, ErrCorruptChunk},
		{"missing", func(cs *MemStore) { _ = cs.Delete(victim) }, ErrMissingChunk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			damaged := NewMemStore()
			for _, id := range cs.IDs() {
				data, _, _ := cs.Get(id)
				_ = damaged.Put(id, data)
			}
			tc.damage(damaged)
			dst := t.TempDir()
			err := Restore(context.Background(), m, dst, damaged)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Restore: %v, want %v", err, tc.wantErr)
			}
			if msg := err.Error(); !strings.Contains(msg, victim) || !strings.Contains(msg, "d/big") {
				t.Errorf("error %q does not name chunk and file", msg)
			}
			if _, err := os.Stat(filepath.Join(dst, "d", "big")); err == nil {
				t.Error("a file with a bad chunk was restored")
			}
			// No temporary file is left behind.
			_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
				if d != nil && strings.HasPrefix(d.Name(), tmpPrefix) {
					t.Errorf("temporary file left: %s", p)
				}
				return nil
			})
		})
	}
}

func TestRestoreRefusesEscapingManifests(t *testing.T) {
	file := func(p string) Entry { return Entry{Path: p, Type: TypeFile, Mode: 0o644} }
	dir := func(p string) Entry { return Entry{Path: p, Type: TypeDir, Mode: 0o755} }
	tests := []struct {
		name    string
		entries []Entry
		field   string
	}{
		{"parent", []Entry{file("../evil")}, "entries[0].path"},
		{"dotdot", []Entry{file("..")}, "entries[0].path"},
		{"absolute", []Entry{file("/tmp/evil")}, "entries[0].path"},
		{"unclean", []Entry{dir("a"), file("a/../../evil")}, "entries[1].path"},
		{"dot element", []Entry{dir("a"), file("a/./b")}, "entries[1].path"},
		{"empty element", []Entry{dir("a"), file("a//b")}, "entries[1].path"},
		{"trailing slash", []Entry{dir("a/")}, "entries[0].path"},
		{"through a symlink", []Entry{
			{Path: "link", Type: TypeSymlink, Target: "/tmp"},
			file("link/evil"),
		}, "entries[1].path"},
		{"under a file", []Entry{file("f"), file("f/evil")}, "entries[1].path"},
		{"no parent", []Entry{file("nowhere/evil")}, "entries[0].path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dst := filepath.Join(base, "dst")
			m := Manifest{Version: Version, Job: "j", Task: "t", Entries: tc.entries}
			err := Restore(context.Background(), m, dst, NewMemStore())
			if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Restore: %v, want ErrInvalidManifest naming %s", err, tc.field)
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a refused restore created %v", entries)
			}
		})
	}
}

// TestRestoreRefusesLinksOutside (issue 22): a link whose target is
// absolute, climbs out, or climbs through another link of the snapshot
// (whose target changes what ".." means) is refused before anything is
// written: a resumed task must find only its own files behind its links.
func TestRestoreRefusesLinksOutside(t *testing.T) {
	dir := func(p string) Entry { return Entry{Path: p, Type: TypeDir, Mode: 0o755} }
	link := func(p, target string) Entry { return Entry{Path: p, Type: TypeSymlink, Target: target} }
	for _, tc := range []struct {
		name    string
		entries []Entry
		ok      bool
	}{
		{"absolute", []Entry{link("model.pt", "/var/lib/agora/identity.key")}, false},
		{"climbs out", []Entry{link("model.pt", "../../identity.key")}, false},
		{"climbs out from below", []Entry{dir("d"), link("d/l", "../../x")}, false},
		{"through a link", []Entry{dir("d"), dir("d/e"), link("d/e/up", "../.."), link("z", "d/e/up/../x")}, false},
		{"inside", []Entry{dir("d"), link("d/l", "../f"), link("f", "d")}, true},
		{"dangling inside", []Entry{link("l", "not/yet/there")}, true},
		{"to a link", []Entry{link("a", "b"), link("b", "c")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dst := filepath.Join(base, "dst")
			m := Manifest{Version: Version, Job: "j", Task: "t", Entries: tc.entries}
			err := Restore(context.Background(), m, dst, NewMemStore())
			if tc.ok {
				if err != nil {
					t.Fatalf("Restore: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "target") {
				t.Fatalf("Restore: %v, want ErrInvalidManifest naming the target", err)
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a refused restore created %v", entries)
			}
		})
	}
}

// TestSnapshotSkipsLinksOutside: a task's link out of its checkpoint
// directory is left out of the snapshot, with the reason, so its other
// files still restore.
func TestSnapshotSkipsLinksOutside(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, []node{
		{path: "d", dir: true},
		{path: "d/up", target: ".."},
		{path: "f", data: []byte("state")},
		{path: "in", target: "f"},
		{path: "out", target: "/etc/passwd"},
		{path: "via", target: "d/up/../f"},
	})
	cs := NewMemStore()
	m, st := mustSnapshot(t, src, 1, cs)
	var skipped []string
	for _, s := range m.Skipped {
		skipped = append(skipped, s.Path+": "+s.Reason)
	}
	if st.Symlinks != 2 || len(m.Skipped) != 2 || !strings.Contains(strings.Join(skipped, "\n"), "out: symlink target outside") {
		t.Fatalf("stats %+v, skipped %q; want d/up and in kept, out and via skipped", st, skipped)
	}
	if err := Restore(context.Background(), m, filepath.Join(t.TempDir(), "dst"), cs); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRefusesSymlinkedRoot: a checkpoint directory that is a
// link (a task could plant one) is refused, and what its target holds
// is not deleted as stale.
func TestRestoreRefusesSymlinkedRoot(t *testing.T) {
	target, base := t.TempDir(), t.TempDir()
	precious := filepath.Join(target, "precious")
	if err := os.WriteFile(precious, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(base, "checkpoint")
	if err := os.Symlink(target, dst); err != nil {
		t.Fatal(err)
	}
	m := Manifest{Version: Version, Job: "j", Task: "t"}
	if err := Restore(context.Background(), m, dst, NewMemStore()); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Restore into a symlinked root: %v", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("the link's target lost its file: %v", err)
	}
}

// TestRestoreChecksFreeSpace: a snapshot larger than the free space is
// refused before anything is written.
func TestRestoreChecksFreeSpace(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, []node{{path: "big", data: randBytes(2, 1<<20)}})
	cs := NewMemStore()
	m, _ := mustSnapshot(t, src, 1, cs)
	saved := freeSpace
	t.Cleanup(func() { freeSpace = saved })
	freeSpace = func(string) (uint64, error) { return spaceMargin + 1<<19, nil }
	dst := filepath.Join(t.TempDir(), "dst")
	if err := Restore(context.Background(), m, dst, cs); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Restore: %v, want ErrNoSpace", err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Errorf("a refused restore wrote %v", entries)
	}
	freeSpace = func(string) (uint64, error) { return spaceMargin + 1<<21, nil }
	if err := Restore(context.Background(), m, dst, cs); err != nil {
		t.Fatal(err)
	}
}

// cancellingStore cancels its restore's context at the first chunk read.
type cancellingStore struct {
	*MemStore
	cancel context.CancelFunc
}

func (s cancellingStore) Get(id string) ([]byte, bool, error) {
	s.cancel()
	return s.MemStore.Get(id)
}

// TestRestoreCancelled: a restore whose context ends (the resume
// timeout) stops between chunks with the context's error.
func TestRestoreCancelled(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, []node{{path: "a", data: randBytes(3, 2<<20)}, {path: "b", data: randBytes(4, 1<<20)}})
	cs := NewMemStore()
	m, _ := mustSnapshot(t, src, 1, cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dst := filepath.Join(t.TempDir(), "dst")
	err := Restore(ctx, m, dst, cancellingStore{cs, cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Restore: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "b")); err == nil {
		t.Fatal("the restore went on after its context ended")
	}
}
