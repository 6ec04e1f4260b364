package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"
)

// tmpPrefix starts the names of the temporary files Restore writes.
const tmpPrefix = ".agora-restore-"

// Restore makes dst contain exactly the snapshot m: it validates m, checks
// that cs holds every chunk (before touching dst), removes from dst what m
// does not list, creates directories, writes each file to a temporary file
// that is renamed into place once its chunks are verified, recreates
// symlinks, then sets modes and modification times (symlinks keep the
// times of their creation). dst is created if missing. Every operation
// goes through an os.Root on dst, so nothing outside dst is touched, even
// through symlinks m itself restores. A missing chunk fails with
// ErrMissingChunk and a chunk that does not match its ID with
// ErrCorruptChunk, both naming the chunk and the file. A restore that
// fails after touching dst leaves it partly restored, but never with a
// torn file; it may be retried.
//
// dst must not be a symlink (a task could plant one to make the restore
// delete what its target holds), and its file system must have room for
// the snapshot's bytes (ErrNoSpace). ctx cancels a restore between
// chunks: what was written stays, as after any failure.
func Restore(ctx context.Context, m Manifest, dst string, cs ChunkStore) error {
	fail := func(err error) error { return fmt.Errorf("checkpoint: restore into %s: %w", dst, err) }
	if err := m.Validate(); err != nil {
		return fail(err)
	}
	if err := checkChunks(m, cs); err != nil {
		return fail(err)
	}
	if info, err := os.Lstat(dst); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return fail(fmt.Errorf("%w: the checkpoint directory is a symlink", ErrInvalidManifest))
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return fail(err)
	}
	if free, err := freeSpace(dst); err == nil && uint64(m.TotalBytes)+spaceMargin > free {
		return fail(fmt.Errorf("%w: the snapshot holds %d bytes, the file system has %d free (keeping %d)", ErrNoSpace, m.TotalBytes, free, spaceMargin))
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fail(err)
	}
	defer root.Close()

	want := make(map[string]*Entry, len(m.Entries))
	for i := range m.Entries {
		want[m.Entries[i].Path] = &m.Entries[i]
	}
	r := &restorer{ctx: ctx, root: root, cs: cs, want: want}
	if err := r.removeStale("."); err != nil {
		return fail(err)
	}
	for _, e := range m.Entries {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		var err error
		switch e.Type {
		case TypeDir:
			err = r.mkdir(e)
		case TypeFile:
			err = r.writeFile(e)
		case TypeSymlink:
			err = r.symlink(e)
		}
		if err != nil {
			return fail(err)
		}
	}
	// Directory modes and times last, in reverse order so children come
	// before their parents: writing into a directory changes its time, and
	// a read-only parent would block the child's chmod.
	for i := len(m.Entries) - 1; i >= 0; i-- {
		if e := m.Entries[i]; e.Type == TypeDir {
			if err := r.setAttrs(e); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}

// spaceMargin is the free space a restore leaves to the file system.
const spaceMargin = 16 << 20

// freeSpace is the space an unprivileged writer may still use on the file
// system holding dir; a variable for tests.
var freeSpace = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// checkChunks fails with ErrMissingChunk, naming the chunk and a file that
// uses it, if cs lacks any chunk m references.
func checkChunks(m Manifest, cs ChunkStore) error {
	seen := make(map[string]struct{})
	for _, e := range m.Entries {
		for _, id := range e.Chunks {
			if _, ok := seen[id]; ok {
				continue
			}
			seen[id] = struct{}{}
			has, err := cs.Has(id)
			if err != nil {
				return fmt.Errorf("chunk store: has %s: %w", id, err)
			}
			if !has {
				return fmt.Errorf("%w: chunk %s of file %s", ErrMissingChunk, id, e.Path)
			}
		}
	}
	return nil
}

// restorer is the state of one Restore call.
type restorer struct {
	ctx  context.Context
	root *os.Root
	cs   ChunkStore
	want map[string]*Entry
	tmp  int // counter for temporary file names
}

// removeStale removes under dir everything that m does not list with the
// same type. Directories it keeps are made writable for the restore.
func (r *restorer) removeStale(dir string) error {
	f, err := r.root.Open(dir)
	if errors.Is(err, fs.ErrPermission) && dir != "." {
		if err = r.root.Chmod(dir, 0o700); err == nil {
			f, err = r.root.Open(dir)
		}
	}
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, d := range entries {
		p := d.Name()
		if dir != "." {
			p = dir + "/" + d.Name()
		}
		e := r.want[p]
		switch {
		case e != nil && e.Type == TypeDir && d.Type().IsDir():
			if err := r.removeStale(p); err != nil {
				return err
			}
		case e != nil && e.Type == TypeFile && d.Type().IsRegular():
			// Replaced by rename later.
		case e != nil && e.Type == TypeSymlink && d.Type()&fs.ModeSymlink != 0:
			if target, err := r.root.Readlink(p); err == nil && target == e.Target {
				continue
			}
			if err := r.root.Remove(p); err != nil {
				return err
			}
		default:
			if err := r.removeAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeAll removes p and what it holds, making read-only directories
// writable when that is what stops it.
func (r *restorer) removeAll(p string) error {
	err := r.root.RemoveAll(p)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = fs.WalkDir(r.root.FS(), p, func(q string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = r.root.Chmod(q, 0o700)
		}
		return nil
	})
	return r.root.RemoveAll(p)
}

// mkdir creates a directory, or makes an existing one writable until its
// attributes are set at the end.
func (r *restorer) mkdir(e Entry) error {
	err := r.root.Mkdir(e.Path, 0o700)
	if errors.Is(err, fs.ErrExist) {
		info, lerr := r.root.Lstat(e.Path)
		if lerr != nil {
			return lerr
		}
		if !info.IsDir() {
			return fmt.Errorf("%s: exists and is not a directory", e.Path)
		}
		return r.root.Chmod(e.Path, 0o700)
	}
	return err
}

// writeFile writes a file's chunks, verified, to a temporary file in the
// same directory and renames it into place.
func (r *restorer) writeFile(e Entry) error {
	f, tmp, err := r.createTemp(path.Dir(e.Path))
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = r.root.Remove(tmp)
		}
	}()
	var n int64
	for _, id := range e.Chunks {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		data, has, err := r.cs.Get(id)
		if err != nil {
			return fmt.Errorf("chunk store: get %s: %w", id, err)
		}
		if !has {
			return fmt.Errorf("%w: chunk %s of file %s", ErrMissingChunk, id, e.Path)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != id {
			return fmt.Errorf("%w: chunk %s of file %s: bytes hash to %x", ErrCorruptChunk, id, e.Path, sum)
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		n += int64(len(data))
	}
	if n != e.Size {
		return fmt.Errorf("%w: chunks of file %s hold %d bytes, manifest says %d", ErrCorruptChunk, e.Path, n, e.Size)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := r.root.Chmod(tmp, fs.FileMode(e.Mode)); err != nil {
		return err
	}
	if err := r.root.Rename(tmp, e.Path); err != nil {
		return err
	}
	ok = true
	t := time.Unix(0, e.MtimeNs)
	return r.root.Chtimes(e.Path, t, t)
}

// createTemp creates a new temporary file in dir.
func (r *restorer) createTemp(dir string) (*os.File, string, error) {
	for range 1000 {
		r.tmp++
		name := path.Join(dir, tmpPrefix+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(r.tmp))
		f, err := r.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("%s: no free temporary file name", dir)
}

// symlink creates a symlink unless removeStale kept an identical one.
func (r *restorer) symlink(e Entry) error {
	if target, err := r.root.Readlink(e.Path); err == nil && target == e.Target {
		return nil
	}
	return r.root.Symlink(e.Target, e.Path)
}

// setAttrs sets a directory's mode and access and modification times.
func (r *restorer) setAttrs(e Entry) error {
	if err := r.root.Chmod(e.Path, fs.FileMode(e.Mode)); err != nil {
		return err
	}
	t := time.Unix(0, e.MtimeNs)
	return r.root.Chtimes(e.Path, t, t)
}
