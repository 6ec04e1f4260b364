package checkpoint

import (
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
	if err := Restore(m, dst, cs); err != nil {
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
			err := Restore(m, dst, damaged)
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
			err := Restore(m, dst, NewMemStore())
			if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Restore: %v, want ErrInvalidManifest naming %s", err, tc.field)
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a refused restore created %v", entries)
			}
		})
	}
}
