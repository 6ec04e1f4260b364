package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGCKeepsReferencedChunks(t *testing.T) {
	src := t.TempDir()
	cs := NewMemStore()
	shared := randBytes(7, 1<<20)
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shared", shared)
	write("v", randBytes(8, 300<<10))
	old, _ := mustSnapshot(t, src, 1, cs)
	write("v", randBytes(9, 300<<10))
	cur, _ := mustSnapshot(t, src, 2, cs)

	onlyOld := entry(t, old, "v").Chunks
	all := cs.IDs()
	all = append(all, all[0]) // duplicates are reported once

	tests := []struct {
		name string
		keep []Manifest
		want []string
	}{
		{"keep both", []Manifest{old, cur}, nil},
		{"keep newest", []Manifest{cur}, onlyOld},
		{"keep none", nil, cs.IDs()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GC(tc.keep, all)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("GC = %v, want %v", got, want)
			}
		})
	}

	// Deleting what GC returns leaves the kept manifest restorable.
	for _, id := range GC([]Manifest{cur}, cs.IDs()) {
		if err := cs.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if missing, err := Missing(cur, cs); err != nil || len(missing) != 0 {
		t.Fatalf("after GC, Missing(cur) = %v, %v", missing, err)
	}
	if err := Restore(context.Background(), cur, t.TempDir(), cs); err != nil {
		t.Fatal(err)
	}
	missing, err := Missing(old, cs)
	if err != nil || !slices.Equal(missing, onlyOld) {
		t.Errorf("Missing(old) = %v, %v, want %v", missing, err, onlyOld)
	}
}

func TestMissingListsEachChunkOnce(t *testing.T) {
	m := goldenManifest()
	m.Entries = append(m.Entries, Entry{Path: "f", Type: TypeFile, Size: 2, Chunks: []string{idB, idA}})
	m.TotalBytes += 2
	cs := NewMemStore()
	missing, err := Missing(m, cs)
	if err != nil || !slices.Equal(missing, []string{idA, idB}) {
		t.Errorf("Missing = %v, %v", missing, err)
	}
	_ = cs.Put(idB, []byte("x"))
	if missing, _ := Missing(m, cs); !slices.Equal(missing, []string{idA}) {
		t.Errorf("Missing = %v, want [%s]", missing, idA)
	}
}
