package checkpoint

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Validate reports the first problem that makes m unusable, as an error
// matching ErrInvalidManifest (or ErrLimit) that names the field.
func (m Manifest) Validate() error {
	if m.Version != Version {
		return invalidf("version", "unsupported version %d (want %d)", m.Version, Version)
	}
	if err := checkName("job", m.Job); err != nil {
		return err
	}
	if err := checkName("task", m.Task); err != nil {
		return err
	}
	if m.Replica < 0 {
		return invalidf("replica", "negative (%d)", m.Replica)
	}
	if n := len(m.Entries) + len(m.Skipped); n > lim.entries {
		return limitErr("entries plus skipped", int64(n), "MaxEntries", int64(lim.entries))
	}
	dirs := make(map[string]struct{})
	var total int64
	for i, e := range m.Entries {
		if err := e.validate(m.Entries, i, dirs); err != nil {
			return err
		}
		switch e.Type {
		case TypeDir:
			dirs[e.Path] = struct{}{}
		case TypeFile:
			total += e.Size
			if total > lim.totalBytes {
				return limitErr("total file size", total, "MaxTotalBytes", lim.totalBytes)
			}
		}
	}
	if m.TotalBytes != total {
		return invalidf("total_bytes", "%d, but the files add up to %d", m.TotalBytes, total)
	}
	if err := checkChunkRefs(m.Entries); err != nil {
		return err
	}
	links := symlinkSet(m.Entries)
	for i, e := range m.Entries {
		if e.Type != TypeSymlink {
			continue
		}
		if problem := symlinkProblem(e, links); problem != "" {
			return invalidf(fmt.Sprintf("entries[%d].target", i), "%s", problem)
		}
	}
	for i, s := range m.Skipped {
		field := func(name string) string { return fmt.Sprintf("skipped[%d].%s", i, name) }
		if s.Path == "" || !utf8.ValidString(s.Path) || strings.ContainsRune(s.Path, 0) {
			return invalidf(field("path"), "empty, not valid UTF-8 or holds NUL")
		}
		if len(s.Path) > lim.pathLen {
			return limitErr(field("path")+" length", int64(len(s.Path)), "MaxPathLen", int64(lim.pathLen))
		}
		if len(s.Reason) > MaxReasonLen || !utf8.ValidString(s.Reason) {
			return invalidf(field("reason"), "longer than MaxReasonLen (%d) or not valid UTF-8", MaxReasonLen)
		}
	}
	return nil
}

// validate checks entries[i], given that the entries before it are valid
// and that dirs holds their directories. Field names are built only for
// errors: this runs for up to MaxEntries entries.
func (e Entry) validate(entries []Entry, i int, dirs map[string]struct{}) error {
	field := func(name string) string { return fmt.Sprintf("entries[%d].%s", i, name) }
	if problem := checkPath(e.Path); problem != "" {
		if len(e.Path) > lim.pathLen {
			return limitErr(field("path")+" length", int64(len(e.Path)), "MaxPathLen", int64(lim.pathLen))
		}
		return invalidf(field("path"), "%s", problem)
	}
	if i > 0 && e.Path <= entries[i-1].Path {
		return invalidf(field("path"), "%q is not after %q (entries must be sorted and unique)",
			e.Path, entries[i-1].Path)
	}
	if parent := path.Dir(e.Path); parent != "." {
		if _, ok := dirs[parent]; !ok {
			return invalidf(field("path"), "parent %q of %q is not a dir entry", parent, e.Path)
		}
	}
	if e.Mode > 0o777 {
		return invalidf(field("mode"), "%#o has bits beyond the permission bits 0777", e.Mode)
	}
	switch e.Type {
	case TypeFile:
		if e.Target != "" {
			return invalidf(field("target"), "set on a file")
		}
		if e.Size < 0 {
			return invalidf(field("size"), "negative (%d)", e.Size)
		}
		if e.Size > lim.totalBytes {
			return limitErr(field("size"), e.Size, "MaxTotalBytes", lim.totalBytes)
		}
		// Every chunk holds 1 to MaxChunkSize bytes.
		n := int64(len(e.Chunks))
		if minN := (e.Size + MaxChunkSize - 1) / MaxChunkSize; n < minN || n > e.Size {
			return invalidf(field("chunks"), "%d chunks cannot hold %d bytes", n, e.Size)
		}
		for j, id := range e.Chunks {
			if !validChunkID(id) {
				return invalidf(fmt.Sprintf("entries[%d].chunks[%d]", i, j), "%q is not a lowercase hex SHA-256", id)
			}
		}
	case TypeDir, TypeSymlink:
		if e.Size != 0 {
			return invalidf(field("size"), "%d on a %s (want 0)", e.Size, e.Type)
		}
		if len(e.Chunks) != 0 {
			return invalidf(field("chunks"), "set on a %s", e.Type)
		}
		if e.Type == TypeDir {
			if e.Target != "" {
				return invalidf(field("target"), "set on a dir")
			}
			return nil
		}
		if e.Mode != 0 || e.MtimeNs != 0 {
			return invalidf(field("mode"), "mode and mtime_ns of a symlink must be 0")
		}
		if e.Target == "" || !utf8.ValidString(e.Target) || strings.ContainsRune(e.Target, 0) {
			return invalidf(field("target"), "empty, not valid UTF-8 or holds NUL")
		}
		if len(e.Target) > lim.pathLen {
			return limitErr(field("target")+" length", int64(len(e.Target)), "MaxPathLen", int64(lim.pathLen))
		}
	default:
		return invalidf(field("type"), "unknown type %q (want file, dir or symlink)", e.Type)
	}
	return nil
}

// checkName validates the job or task name.
func checkName(field, s string) error {
	switch {
	case s == "":
		return invalidf(field, "empty")
	case len(s) > MaxNameLen:
		return limitErr(field+" length", int64(len(s)), "MaxNameLen", MaxNameLen)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return invalidf(field, "not valid UTF-8 or holds NUL")
	}
	return nil
}

// checkPath says what is wrong with an entry path, or returns "" for a
// relative, slash-separated, clean path within the checkpoint directory.
func checkPath(p string) string {
	switch {
	case p == "" || p == ".":
		return "empty"
	case len(p) > lim.pathLen:
		return "too long"
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return fmt.Sprintf("%q is not valid UTF-8 or holds NUL", p)
	case path.IsAbs(p):
		return fmt.Sprintf("%q is absolute", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not clean (want %q)", p, path.Clean(p))
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Sprintf("%q escapes the checkpoint directory", p)
	}
	return ""
}

// validChunkID reports whether id is 64 lowercase hex digits.
func validChunkID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkChunkRefs bounds how often one chunk may be listed: a small
// manifest that lists one chunk many times would make a restore write
// far more than it carries (MaxChunkRefs).
func checkChunkRefs(entries []Entry) error {
	refs := map[string]int{}
	for _, e := range entries {
		for _, id := range e.Chunks {
			if refs[id]++; refs[id] > lim.chunkRefs {
				return limitErr("references to chunk "+id[:12]+"… of "+clip(e.Path), int64(refs[id]), "MaxChunkRefs", int64(lim.chunkRefs))
			}
		}
	}
	return nil
}

// symlinkSet is the paths of the symlink entries.
func symlinkSet(entries []Entry) map[string]bool {
	links := map[string]bool{}
	for _, e := range entries {
		if e.Type == TypeSymlink {
			links[e.Path] = true
		}
	}
	return links
}

// symlinkProblem says why symlink e may not be restored, or returns "":
// its target must be relative and, resolved from e's directory one
// element at a time, stay inside the checkpoint directory without
// passing through another symlink of the snapshot (whose own target
// would change what a later ".." means). A task resumed from a
// checkpoint must find only its own files behind its links, not the
// node's.
func symlinkProblem(e Entry, links map[string]bool) string {
	if path.IsAbs(e.Target) {
		return fmt.Sprintf("%q is absolute: a link must stay inside the checkpoint directory", e.Target)
	}
	var at []string // the path walked so far
	if d := path.Dir(e.Path); d != "." {
		at = strings.Split(d, "/")
	}
	elems := strings.Split(e.Target, "/")
	for i, el := range elems {
		switch el {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return fmt.Sprintf("%q leads out of the checkpoint directory", e.Target)
			}
			at = at[:len(at)-1]
			continue
		}
		at = append(at, el)
		if i < len(elems)-1 && links[strings.Join(at, "/")] {
			return fmt.Sprintf("%q passes through the link %s", e.Target, strings.Join(at, "/"))
		}
	}
	return ""
}
