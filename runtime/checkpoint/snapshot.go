package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Meta identifies the snapshot being taken. All of it is supplied by the
// caller; Snapshot reads no clock.
type Meta struct {
	Job     string
	Task    string
	Replica int
	Epoch   uint64
	// Seq is the snapshot's sequence number; the caller keeps it
	// monotonic per task.
	Seq uint64
	// Created is the snapshot's creation time; it must not be zero.
	Created time.Time
}

// SnapshotStats reports what a snapshot found and what it wrote.
type SnapshotStats struct {
	Files, Dirs, Symlinks int
	// Skipped counts the paths recorded in Manifest.Skipped.
	Skipped int
	// Retries counts the files read a second time because they changed
	// while being read.
	Retries int
	// Chunks counts the chunk references of all files; TotalBytes is the
	// size of all files.
	Chunks     int
	TotalBytes int64
	// NewChunks and NewBytes count the chunks written to the store, which
	// lacked them. Chunks written for a read that was then abandoned
	// because the file changed are included.
	NewChunks int
	NewBytes  int64
}

// Reasons recorded in Manifest.Skipped.
const (
	reasonVanished    = "vanished during the snapshot"
	reasonChanged     = "changed while being read, twice"
	reasonUnsupported = "unsupported file type"
	reasonBadName     = "name is not valid UTF-8"
)

// testHook, when set by tests, is called with "open" before a regular file
// is opened and "read" after it was read, before the change check.
var testHook func(event, rel string)

// Snapshot walks dir and returns its manifest, after writing to cs every
// chunk cs does not have yet. Symlinks are recorded, never followed;
// special files are skipped. A file that vanishes or changes while being
// read is tried once more, then recorded in Manifest.Skipped. Any other
// error, or a limit exceeded, fails the snapshot. The caller persists the
// manifest only after Snapshot returns, and must not run GC on cs while a
// snapshot is in progress.
func Snapshot(dir string, meta Meta, cs ChunkStore) (Manifest, SnapshotStats, error) {
	return take(dir, meta, cs, func(s *snapshotter) error { return s.walk(".") })
}

// take records what record finds in dir and makes its manifest.
func take(dir string, meta Meta, cs ChunkStore, record func(*snapshotter) error) (Manifest, SnapshotStats, error) {
	fail := func(err error) (Manifest, SnapshotStats, error) {
		return Manifest{}, SnapshotStats{}, fmt.Errorf("checkpoint: snapshot %s: %w", dir, err)
	}
	if err := checkName("job", meta.Job); err != nil {
		return fail(err)
	}
	if err := checkName("task", meta.Task); err != nil {
		return fail(err)
	}
	if meta.Replica < 0 || meta.Created.IsZero() {
		return fail(errors.New("meta: negative replica or zero created time"))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fail(err)
	}
	defer root.Close()

	s := &snapshotter{root: root, cs: cs, seen: make(map[string]struct{})}
	if err := record(s); err != nil {
		return fail(err)
	}
	m, err := s.finish(meta)
	if err != nil {
		return fail(err)
	}
	return m, s.stats, nil
}

// finish makes the manifest of what was recorded.
func (s *snapshotter) finish(meta Meta) (Manifest, error) {
	if err := s.skipOutsideLinks(); err != nil {
		return Manifest{}, err
	}
	slices.SortFunc(s.entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(s.skipped, func(a, b Skipped) int { return strings.Compare(a.Path, b.Path) })
	m := Manifest{
		Version:    Version,
		Job:        meta.Job,
		Task:       meta.Task,
		Replica:    meta.Replica,
		Epoch:      meta.Epoch,
		Seq:        meta.Seq,
		CreatedNs:  meta.Created.UnixNano(),
		TotalBytes: s.stats.TotalBytes,
		Entries:    s.entries,
		Skipped:    s.skipped,
	}
	// Encoding validates the result and enforces MaxManifestSize.
	if _, err := EncodeManifest(m); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// snapshotter is the state of one Snapshot call.
type snapshotter struct {
	root    *os.Root
	cs      ChunkStore
	seen    map[string]struct{} // chunks known to be in cs
	buf     []byte              // the chunker's buffer, reused for every file
	entries []Entry
	skipped []Skipped
	stats   SnapshotStats
}

// skipOutsideLinks moves the symlinks a restore would refuse (their
// targets lead outside the directory: symlinkProblem) to the skipped
// paths.
func (s *snapshotter) skipOutsideLinks() error {
	links := symlinkSet(s.entries)
	kept := s.entries[:0]
	var out []Entry
	for _, e := range s.entries {
		if e.Type == TypeSymlink && symlinkProblem(e, links) != "" {
			out = append(out, e)
			continue
		}
		kept = append(kept, e)
	}
	s.entries = kept
	for _, e := range out {
		s.stats.Symlinks--
		if err := s.skip(e.Path, "symlink target outside the checkpoint directory"); err != nil {
			return err
		}
	}
	return nil
}

// count enforces MaxEntries before one more entry or skipped path.
func (s *snapshotter) count() error {
	if n := len(s.entries) + len(s.skipped) + 1; n > lim.entries {
		return limitErr("entries plus skipped", int64(n), "MaxEntries", int64(lim.entries))
	}
	return nil
}

func (s *snapshotter) skip(rel, reason string) error {
	if err := s.count(); err != nil {
		return err
	}
	p := strings.ToValidUTF8(rel, "\uFFFD")
	if len(p) > lim.pathLen { // replacement characters are longer
		p = strings.ToValidUTF8(p[:lim.pathLen], "")
	}
	if len(reason) > MaxReasonLen {
		reason = strings.ToValidUTF8(reason[:MaxReasonLen], "")
	}
	s.skipped = append(s.skipped, Skipped{Path: p, Reason: reason})
	s.stats.Skipped++
	return nil
}

func (s *snapshotter) add(e Entry) error {
	if err := s.count(); err != nil {
		return err
	}
	s.entries = append(s.entries, e)
	return nil
}

// walk records the contents of the directory rel ("." for the root).
func (s *snapshotter) walk(rel string) error {
	f, err := s.root.Open(rel)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		child := name
		if rel != "." {
			child = rel + "/" + name
		}
		if err := s.visit(child); err != nil {
			return err
		}
	}
	return nil
}

// visit records one path found in a directory listing.
func (s *snapshotter) visit(rel string) error {
	if len(rel) > lim.pathLen {
		return limitErr("path length of "+clip(rel), int64(len(rel)), "MaxPathLen", int64(lim.pathLen))
	}
	if !utf8.ValidString(rel) {
		return s.skip(rel, reasonBadName)
	}
	info, err := s.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return s.skip(rel, reasonVanished)
	}
	if err != nil {
		return err
	}
	mode := info.Mode()
	switch {
	case mode.IsRegular():
		return s.file(rel)
	case mode.IsDir():
		// Readdirnames is called after the entry is recorded; a directory
		// that vanishes in between keeps its entry and loses its contents,
		// as if it had been emptied.
		if err := s.add(Entry{Path: rel, Type: TypeDir, Mode: uint32(mode.Perm()),
			MtimeNs: info.ModTime().UnixNano()}); err != nil {
			return err
		}
		s.stats.Dirs++
		err := s.walk(rel)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return err
	case mode&fs.ModeSymlink != 0:
		target, err := s.root.Readlink(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return s.skip(rel, reasonVanished)
		case errors.Is(err, syscall.EINVAL):
			return s.skip(rel, reasonChanged)
		case err != nil:
			return err
		case !utf8.ValidString(target):
			return s.skip(rel, "symlink target is not valid UTF-8")
		case len(target) > lim.pathLen:
			return limitErr("symlink target length of "+clip(rel), int64(len(target)), "MaxPathLen", int64(lim.pathLen))
		}
		if err := s.add(Entry{Path: rel, Type: TypeSymlink, Target: target}); err != nil {
			return err
		}
		s.stats.Symlinks++
		return nil
	default:
		return s.skip(rel, fmt.Sprintf("%s (%s)", reasonUnsupported, mode.Type()))
	}
}

// file records a regular file, reading it a second time if it changed
// while being read.
func (s *snapshotter) file(rel string) error {
	for attempt := 1; ; attempt++ {
		e, reason, err := s.readFile(rel)
		if err != nil {
			return err
		}
		if reason == "" {
			if err := s.add(e); err != nil {
				return err
			}
			s.stats.Files++
			s.stats.Chunks += len(e.Chunks)
			s.stats.TotalBytes += e.Size
			return nil
		}
		if attempt == 2 {
			return s.skip(rel, reason)
		}
		s.stats.Retries++
	}
}

// readFile reads and chunks one regular file. A non-empty reason says the
// file vanished or changed and the read should be retried or skipped.
func (s *snapshotter) readFile(rel string) (e Entry, reason string, err error) {
	if testHook != nil {
		testHook("open", rel)
	}
	linfo, err := s.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return e, reasonVanished, nil
	}
	if err != nil {
		return e, "", err
	}
	// O_NONBLOCK: a FIFO swapped in after Lstat must not block the open.
	f, err := s.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return e, reasonVanished, nil
	}
	if err != nil {
		return e, "", err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return e, "", err
	}
	if !before.Mode().IsRegular() || !os.SameFile(linfo, before) {
		return e, reasonChanged, nil
	}
	size := before.Size()
	if total := s.stats.TotalBytes + size; total > lim.totalBytes {
		return e, "", limitErr("total file size", total, "MaxTotalBytes", lim.totalBytes)
	}
	chunks, n, err := s.chunkFile(f)
	if err != nil {
		return e, "", fmt.Errorf("read %s: %w", rel, err)
	}
	if testHook != nil {
		testHook("read", rel)
	}
	after, err := f.Stat()
	if err != nil {
		return e, "", err
	}
	if n != size || after.Size() != size || !after.ModTime().Equal(before.ModTime()) {
		return e, reasonChanged, nil
	}
	return Entry{
		Path:    rel,
		Type:    TypeFile,
		Mode:    uint32(before.Mode().Perm()),
		Size:    size,
		MtimeNs: before.ModTime().UnixNano(),
		Chunks:  chunks,
	}, "", nil
}

// chunkFile splits r into chunks, writes those cs lacks and returns the
// chunk IDs and the number of bytes read.
func (s *snapshotter) chunkFile(r io.Reader) (ids []string, n int64, err error) {
	c := newChunker(r, s.buf)
	s.buf = c.buf
	for {
		data, err := c.next()
		if err == io.EOF {
			return ids, n, nil
		}
		if err != nil {
			return nil, n, err
		}
		n += int64(len(data))
		id := ID(data)
		ids = append(ids, id)
		if err := s.store(id, data); err != nil {
			return nil, n, err
		}
	}
}

// store writes a chunk unless cs already has it.
func (s *snapshotter) store(id string, data []byte) error {
	if _, ok := s.seen[id]; ok {
		return nil
	}
	has, err := s.cs.Has(id)
	if err != nil {
		return fmt.Errorf("chunk store: has %s: %w", id, err)
	}
	if !has {
		if err := s.cs.Put(id, data); err != nil {
			return fmt.Errorf("chunk store: put %s: %w", id, err)
		}
		s.stats.NewChunks++
		s.stats.NewBytes += int64(len(data))
	}
	s.seen[id] = struct{}{}
	return nil
}

// clip shortens a path for an error message.
func clip(p string) string {
	if len(p) <= 80 {
		return p
	}
	return strings.ToValidUTF8(p[:77], "") + "..."
}
