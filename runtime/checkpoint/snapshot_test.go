package checkpoint

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// roundTripTree has nested and empty directories, empty and 3 MiB files,
// symlinks (one dangling), modes including read-only ones, and
// names that sort differently by path and by walk order ("a-b" < "a/").
func roundTripTree() []node {
	return []node{
		{path: "a", dir: true},
		{path: "a/b", dir: true, mode: 0o750},
		{path: "a/b/c", dir: true},
		{path: "a/b/c/deep.txt", data: []byte("deep state\n")},
		{path: "a/empty", data: nil},
		{path: "a/empty-dir", dir: true, mode: 0o700},
		{path: "a-b", data: []byte("sorts before a/ by path")},
		{path: "big.bin", data: randBytes(1, 3<<20), mode: 0o600},
		{path: "run.sh", data: []byte("#!/bin/sh\n"), mode: 0o755},
		{path: "ro", dir: true, mode: 0o555},
		{path: "ro/frozen", data: []byte("read only"), mode: 0o444},
		{path: "owner-only", data: []byte("s"), mode: 0o400},
		{path: "link", target: "a/b/c/deep.txt"},
		{path: "dangling", target: "a/nonexistent/elsewhere"},
	}
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "restored")
	writeTree(t, src, roundTripTree())
	makeRemovable(t, filepath.Dir(dst))
	cs := NewMemStore()

	m, st := mustSnapshot(t, src, 1, cs)
	if st.Files != 7 || st.Dirs != 5 || st.Symlinks != 2 || st.Skipped != 0 {
		t.Errorf("stats: %+v, want 7 files, 5 dirs, 2 symlinks, 0 skipped", st)
	}
	if st.NewBytes != st.TotalBytes || st.TotalBytes != m.TotalBytes {
		t.Errorf("first snapshot: new %d bytes, total %d, manifest total %d", st.NewBytes, st.TotalBytes, m.TotalBytes)
	}
	big := entry(t, m, "big.bin")
	if len(big.Chunks) < 6 || len(big.Chunks) > 48 {
		t.Errorf("3 MiB file has %d chunks, want 6..48", len(big.Chunks))
	}
	if e := entry(t, m, "a/empty"); len(e.Chunks) != 0 || e.Size != 0 {
		t.Errorf("empty file entry: %+v", e)
	}
	if e := entry(t, m, "link"); e.Type != TypeSymlink || e.Target != "a/b/c/deep.txt" {
		t.Errorf("symlink entry: %+v", e)
	}
	if e := entry(t, m, "ro"); e.Mode != 0o555 || e.Type != TypeDir {
		t.Errorf("ro entry: %+v", e)
	}
	paths := make([]string, len(m.Entries))
	for i, e := range m.Entries {
		paths[i] = e.Path
	}
	if !slices.IsSorted(paths) {
		t.Errorf("entries not sorted: %q", paths)
	}

	// Through the wire format and back.
	data, err := EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := Restore(context.Background(), m2, dst, cs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	sameTree(t, src, dst)

	// Restoring again over the result changes nothing.
	if err := Restore(context.Background(), m2, dst, cs); err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	sameTree(t, src, dst)
}

func TestUnchangedSnapshotWritesNothing(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, roundTripTree())
	cs := NewMemStore()
	m1, _ := mustSnapshot(t, src, 7, cs)
	m2, st := mustSnapshot(t, src, 7, cs)
	if st.NewChunks != 0 || st.NewBytes != 0 {
		t.Errorf("unchanged snapshot wrote %d chunks, %d bytes", st.NewChunks, st.NewBytes)
	}
	id1, _ := ManifestID(m1)
	id2, _ := ManifestID(m2)
	if id1 != id2 {
		t.Errorf("unchanged tree, same meta: manifest IDs %s and %s differ", id1, id2)
	}
}

// bigFileCase snapshots a file, edits it and snapshots again.
func bigFileCase(t *testing.T, size int, edit func([]byte) []byte) (before, after Entry, st SnapshotStats) {
	t.Helper()
	src := t.TempDir()
	data := randBytes(2, size)
	p := filepath.Join(src, "model.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cs := NewMemStore()
	m1, _ := mustSnapshot(t, src, 1, cs)
	if err := os.WriteFile(p, edit(slices.Clone(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	m2, st := mustSnapshot(t, src, 2, cs)
	return entry(t, m1, "model.bin"), entry(t, m2, "model.bin"), st
}

func TestAppendWritesFewChunks(t *testing.T) {
	const size, extra = 16 << 20, 100 << 10
	tail := randBytes(3, extra)
	before, after, st := bigFileCase(t, size, func(b []byte) []byte { return append(b, tail...) })
	// All chunks but the old last one survive.
	kept := commonPrefix(before.Chunks, after.Chunks)
	t.Logf("append %d KiB to %d MiB: %d of %d chunks kept, %d new chunks, %d new bytes of %d (%.2f%%)",
		extra>>10, size>>20, kept, len(before.Chunks), st.NewChunks, st.NewBytes, st.TotalBytes,
		100*float64(st.NewBytes)/float64(st.TotalBytes))
	if kept < len(before.Chunks)-1 {
		t.Errorf("kept %d of %d chunks, want all but the last", kept, len(before.Chunks))
	}
	if st.NewChunks > 3 || st.NewBytes > 3*MaxChunkSize || st.NewBytes*20 > st.TotalBytes {
		t.Errorf("append wrote %d chunks, %d bytes of %d", st.NewChunks, st.NewBytes, st.TotalBytes)
	}
}

func TestInsertionChangesOnlyNearbyChunks(t *testing.T) {
	const size, at = 16 << 20, 8<<20 + 12345
	ins := randBytes(4, 1000)
	before, after, st := bigFileCase(t, size, func(b []byte) []byte {
		return slices.Concat(b[:at], ins, b[at:])
	})
	pre := commonPrefix(before.Chunks, after.Chunks)
	suf := commonSuffix(before.Chunks, after.Chunks)
	t.Logf("insert 1000 bytes at 8 MiB of %d MiB: chunks %d -> %d, common prefix %d, suffix %d, new chunks %d, new bytes %d",
		size>>20, len(before.Chunks), len(after.Chunks), pre, suf, st.NewChunks, st.NewBytes)
	if changed := len(after.Chunks) - pre - suf; changed < 1 || changed > 2 {
		t.Errorf("%d chunks changed around the insertion, want 1 or 2", changed)
	}
	if st.NewBytes > 2*MaxChunkSize {
		t.Errorf("insertion wrote %d bytes", st.NewBytes)
	}
}

func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

func TestSnapshotFileChangingWhileRead(t *testing.T) {
	rewrite := func(data string) func(string) error {
		return func(p string) error { return os.WriteFile(p, []byte(data), 0o644) }
	}
	replace := func(withDir bool) func(string) error {
		return func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			if withDir {
				return os.Mkdir(p, 0o755)
			}
			return os.WriteFile(p, []byte("replacement"), 0o644)
		}
	}
	tests := []struct {
		name        string
		event       string // when the hook acts: "open" or "read"
		times       int    // how many times it acts
		act         func(p string) error
		wantRetries int
		wantSkipped string // reason; empty: the file is in the snapshot
		wantData    string
	}{
		{"changes once", "read", 1, rewrite("second version"), 1, "", "second version"},
		{"keeps changing", "read", 2, rewrite(strings.Repeat("x", 100)), 1, reasonChanged, ""},
		{"vanishes", "open", 1, os.Remove, 1, reasonVanished, ""},
		{"replaced by a directory", "open", 1, replace(true), 1, reasonChanged, ""},
		// An open file replaced by another keeps its content: the snapshot
		// records the version it read, whole.
		{"replaced after being read", "read", 1, replace(false), 0, "", "first version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			p := filepath.Join(src, "state.json")
			if err := os.WriteFile(p, []byte("first version"), 0o644); err != nil {
				t.Fatal(err)
			}
			n := 0
			testHook = func(event, rel string) {
				if event == tc.event && rel == "state.json" && n < tc.times {
					n++
					if err := tc.act(p); err != nil {
						t.Error(err)
					}
				}
			}
			t.Cleanup(func() { testHook = nil })
			cs := NewMemStore()
			m, st := mustSnapshot(t, src, 1, cs)
			if st.Retries != tc.wantRetries {
				t.Errorf("retries %d, want %d", st.Retries, tc.wantRetries)
			}
			if tc.wantSkipped == "" {
				if len(m.Skipped) != 0 {
					t.Fatalf("skipped %v", m.Skipped)
				}
				dst := t.TempDir()
				if err := Restore(context.Background(), m, dst, cs); err != nil {
					t.Fatal(err)
				}
				if got := fileData(t, dst, "state.json"); string(got) != tc.wantData {
					t.Errorf("restored %q, want %q", got, tc.wantData)
				}
				return
			}
			if len(m.Skipped) != 1 || m.Skipped[0].Path != "state.json" || !strings.HasPrefix(m.Skipped[0].Reason, tc.wantSkipped) {
				t.Fatalf("skipped %+v, want state.json: %s", m.Skipped, tc.wantSkipped)
			}
			for _, e := range m.Entries {
				if e.Path == "state.json" {
					t.Errorf("skipped file also has an entry: %+v", e)
				}
			}
		})
	}
}

func TestSnapshotSkipsSpecialFiles(t *testing.T) {
	src := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.WriteFile(filepath.Join(src, "ok"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := string([]byte{'b', 0xff, 'd'})
	if err := os.WriteFile(filepath.Join(src, bad), []byte("?"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, st := mustSnapshot(t, src, 1, NewMemStore())
	if st.Files != 1 || st.Skipped != 2 {
		t.Fatalf("stats %+v, want 1 file and 2 skipped", st)
	}
	if s := m.Skipped[1]; s.Path != "pipe" || !strings.HasPrefix(s.Reason, reasonUnsupported) {
		t.Errorf("fifo: %+v", s)
	}
	if s := m.Skipped[0]; s.Path != "b\uFFFDd" || s.Reason != reasonBadName {
		t.Errorf("bad name: %+v", s)
	}
}

func TestSnapshotRejectsBadMeta(t *testing.T) {
	src := t.TempDir()
	for _, meta := range []Meta{
		{Task: "t", Created: testMeta(1).Created},
		{Job: "j", Created: testMeta(1).Created},
		{Job: "j", Task: "t"},
		{Job: "j", Task: "t", Replica: -1, Created: testMeta(1).Created},
		{Job: strings.Repeat("j", MaxNameLen+1), Task: "t", Created: testMeta(1).Created},
	} {
		if _, _, err := Snapshot(src, meta, NewMemStore()); err == nil {
			t.Errorf("Snapshot accepted meta %+v", meta)
		}
	}
	if _, _, err := Snapshot(filepath.Join(src, "missing"), testMeta(1), NewMemStore()); err == nil {
		t.Error("Snapshot of a missing directory succeeded")
	}
}

func TestSnapshotDeduplicatesWithinAFile(t *testing.T) {
	src := t.TempDir()
	block := randBytes(5, 1<<20)
	data := bytes.Repeat(block, 4)
	if err := os.WriteFile(filepath.Join(src, "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "copy-of-a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cs := NewMemStore()
	m, st := mustSnapshot(t, src, 1, cs)
	if st.NewBytes*3 > st.TotalBytes {
		t.Errorf("repeated content: new %d bytes of %d", st.NewBytes, st.TotalBytes)
	}
	dst := t.TempDir()
	if err := Restore(context.Background(), m, dst, cs); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fileData(t, dst, "copy-of-a"), data) {
		t.Error("restored copy differs")
	}
}

func TestEmptySnapshotEmptiesDestination(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeTree(t, dst, []node{{path: "d", dir: true}, {path: "d/f", data: []byte("f")}, {path: "l", target: "d"}})
	cs := NewMemStore()
	m, st := mustSnapshot(t, src, 1, cs)
	if len(m.Entries) != 0 || st.NewChunks != 0 {
		t.Fatalf("empty directory: %d entries, %d new chunks", len(m.Entries), st.NewChunks)
	}
	data, err := EncodeManifest(m)
	if err != nil || !strings.Contains(string(data), `"entries":[]`) {
		t.Fatalf("EncodeManifest: %s, %v", data, err)
	}
	if err := Restore(context.Background(), m, dst, cs); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Errorf("dst still holds %v", entries)
	}
}
