package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// ErrNotProduced is the error of SnapshotPaths for a path that does not
// exist, or lies beneath something that is not a directory.
var ErrNotProduced = errors.New("not produced")

// SnapshotPaths is Snapshot of the named paths of dir only: each a file,
// a symlink, or a directory with everything beneath it, recorded with the
// directories that lead to it. Paths are relative, clean and slash
// separated; one inside another is recorded once. A path missing, or
// beneath a file or a symlink, fails the snapshot with ErrNotProduced
// naming it: a task's outputs, taken after it succeeded.
func SnapshotPaths(dir string, paths []string, meta Meta, cs ChunkStore) (Manifest, SnapshotStats, error) {
	return take(dir, meta, cs, func(s *snapshotter) error {
		dirs := map[string]bool{}
		for _, p := range paths {
			if p == "" || p == "." || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
				return fmt.Errorf("path %q: not a clean relative path", p)
			}
			if covered(p, paths) {
				continue
			}
			parts := strings.Split(p, "/")
			for i := 1; i < len(parts); i++ {
				d := strings.Join(parts[:i], "/")
				if dirs[d] {
					continue
				}
				info, err := s.root.Lstat(d)
				if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()) {
					return fmt.Errorf("%s: %w (%s is not a directory)", p, ErrNotProduced, d)
				}
				if err != nil {
					return err
				}
				if err := s.add(Entry{Path: d, Type: TypeDir, Mode: uint32(info.Mode().Perm()), MtimeNs: info.ModTime().UnixNano()}); err != nil {
					return err
				}
				dirs[d] = true
			}
			if _, err := s.root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", p, ErrNotProduced)
			} else if err != nil {
				return err
			}
			if err := s.visit(p); err != nil {
				return err
			}
		}
		return nil
	})
}

// covered reports whether p lies inside another of paths.
func covered(p string, paths []string) bool {
	for _, q := range paths {
		if q != p && strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}
