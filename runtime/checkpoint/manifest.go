package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Version is the manifest format version this package writes and reads.
const Version = 1

// EntryType is the kind of a manifest entry.
type EntryType string

// Entry types.
const (
	TypeFile    EntryType = "file"
	TypeDir     EntryType = "dir"
	TypeSymlink EntryType = "symlink"
)

// Manifest describes one snapshot of a task's checkpoint directory. Its
// JSON form is the checkpoint format (see the package documentation); the
// field order below is the canonical order.
type Manifest struct {
	// Version is the format version, always [Version].
	Version int `json:"version"`
	// Job, Task and Replica identify the task, as given by the caller.
	Job     string `json:"job"`
	Task    string `json:"task"`
	Replica int    `json:"replica"`
	// Epoch is the scheduling epoch of the attempt that took the snapshot.
	Epoch uint64 `json:"epoch"`
	// Seq numbers the task's snapshots; the caller keeps it monotonic.
	Seq uint64 `json:"seq"`
	// CreatedNs is the creation time given by the caller, in nanoseconds
	// since the Unix epoch.
	CreatedNs int64 `json:"created_ns"`
	// TotalBytes is the sum of the sizes of the file entries.
	TotalBytes int64 `json:"total_bytes"`
	// Entries lists the snapshot's contents, sorted by path (byte order),
	// each directory before what it contains.
	Entries []Entry `json:"entries"`
	// Skipped lists the paths that are not in the snapshot, and why.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Entry is one file, directory or symlink of a snapshot.
type Entry struct {
	// Path is relative to the checkpoint directory, slash-separated and
	// clean: not empty, not ".", no "." or ".." element, no leading or
	// trailing slash, no empty element.
	Path string `json:"path"`
	// Type is file, dir or symlink.
	Type EntryType `json:"type"`
	// Mode holds the permission bits (0 to 0o777), as a JSON integer; it
	// is 0 for symlinks.
	Mode uint32 `json:"mode"`
	// Size is the file's size in bytes; 0 for directories and symlinks.
	Size int64 `json:"size"`
	// MtimeNs is the modification time in nanoseconds since the Unix
	// epoch; 0 for symlinks.
	MtimeNs int64 `json:"mtime_ns"`
	// Target is a symlink's target, recorded verbatim; empty otherwise.
	Target string `json:"target,omitempty"`
	// Chunks lists a file's chunk IDs in order; empty for empty files,
	// directories and symlinks.
	Chunks []string `json:"chunks,omitempty"`
}

// Skipped is a path the snapshot left out: it vanished or kept changing
// while being read, is not a regular file, directory or symlink, or has a
// name JSON cannot carry.
type Skipped struct {
	// Path is the relative path, with invalid UTF-8 replaced by U+FFFD.
	Path string `json:"path"`
	// Reason says why the path was left out.
	Reason string `json:"reason"`
}

// EncodeManifest validates m and returns its canonical JSON encoding:
// fields in the order of the Go structs, empty optional fields omitted, no
// insignificant whitespace, no HTML escaping, no trailing newline.
func EncodeManifest(m Manifest) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.Entries == nil {
		m.Entries = []Entry{} // "entries":[], never null
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("checkpoint: encode manifest: %w", err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(data) > lim.manifestSize {
		return nil, limitErr("encoded manifest size", int64(len(data)), "MaxManifestSize", int64(lim.manifestSize))
	}
	return data, nil
}

// DecodeManifest parses and validates an encoded manifest. It accepts any
// well-formed JSON with exactly the known fields, not only the canonical
// encoding; the manifest's ID is always computed from its re-encoding.
func DecodeManifest(data []byte) (Manifest, error) {
	if len(data) > lim.manifestSize {
		return Manifest{}, limitErr("manifest size", int64(len(data)), "MaxManifestSize", int64(lim.manifestSize))
	}
	// The version first, so a future format is reported as such rather
	// than as unknown fields. Unmarshal also rejects data after the
	// manifest.
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if v.Version == nil {
		return Manifest{}, invalidf("version", "missing")
	}
	if *v.Version != Version {
		return Manifest{}, invalidf("version", "unsupported version %d (want %d)", *v.Version, Version)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// ManifestID returns the manifest's ID: the lowercase hex SHA-256 of its
// canonical encoding.
func ManifestID(m Manifest) (string, error) {
	data, err := EncodeManifest(m)
	if err != nil {
		return "", err
	}
	return ID(data), nil
}

// ChunkIDs returns the IDs of the chunks m references, each once, in the
// order of first reference.
func (m Manifest) ChunkIDs() []string {
	var ids []string
	seen := make(map[string]struct{})
	for _, e := range m.Entries {
		for _, id := range e.Chunks {
			if _, ok := seen[id]; !ok {
				seen[id] = struct{}{}
				ids = append(ids, id)
			}
		}
	}
	return ids
}
