package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSnapshot measures a first snapshot of a 64 MiB file (every chunk
// new) and a repeated one (every chunk known).
func BenchmarkSnapshot(b *testing.B) {
	src := b.TempDir()
	data := randBytes(11, 64<<20)
	if err := os.WriteFile(filepath.Join(src, "state"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("new", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := Snapshot(src, testMeta(1), NewMemStore()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		cs := NewMemStore()
		if _, _, err := Snapshot(src, testMeta(1), cs); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := Snapshot(src, testMeta(1), cs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRestore measures restoring a 64 MiB file.
func BenchmarkRestore(b *testing.B) {
	src, dst := b.TempDir(), b.TempDir()
	data := randBytes(12, 64<<20)
	if err := os.WriteFile(filepath.Join(src, "state"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	cs := NewMemStore()
	m, _, err := Snapshot(src, testMeta(1), cs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Restore(context.Background(), m, dst, cs); err != nil {
			b.Fatal(err)
		}
	}
}
