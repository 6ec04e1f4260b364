package checkpoint

import (
	"errors"
	"fmt"
)

// Limits. Every snapshot and every manifest is bounded; exceeding a limit
// returns an error that matches [ErrLimit] and names the limit.
const (
	// MaxEntries is the maximum number of entries (files, directories,
	// symlinks) plus skipped paths in one snapshot.
	MaxEntries = 100_000

	// MaxTotalBytes is the maximum total size in bytes of the regular
	// files in one snapshot.
	MaxTotalBytes = 16 << 30 // 16 GiB

	// MaxPathLen is the maximum length in bytes of an entry's relative
	// path and of a symlink target (Linux's PATH_MAX).
	MaxPathLen = 4096

	// MaxNameLen is the maximum length in bytes of the job and task names
	// recorded in a manifest.
	MaxNameLen = 256

	// MaxReasonLen is the maximum length in bytes of the reason recorded
	// for a skipped path; longer reasons are truncated by Snapshot.
	MaxReasonLen = 256

	// MaxManifestSize is the maximum size in bytes of an encoded manifest.
	MaxManifestSize = 64 << 20 // 64 MiB

	// MaxChunkRefs is how many times one chunk may be listed in a
	// manifest: a file of 2 GiB of one repeated byte, whose chunks are all
	// the same, is the most that repeats legitimately.
	MaxChunkRefs = 4096
)

// limits holds the limits Snapshot and the validator enforce. They are the
// constants above except in tests, which lower some of them to test the
// edges quickly.
type limits struct {
	entries      int
	totalBytes   int64
	pathLen      int
	manifestSize int
	chunkRefs    int
}

var lim = limits{
	entries:      MaxEntries,
	totalBytes:   MaxTotalBytes,
	pathLen:      MaxPathLen,
	manifestSize: MaxManifestSize,
	chunkRefs:    MaxChunkRefs,
}

// Sentinel errors. Errors returned by the package wrap these, so callers
// test them with errors.Is.
var (
	// ErrLimit reports that a snapshot or a manifest exceeds one of the
	// package's limits; the message names the limit.
	ErrLimit = errors.New("checkpoint: limit exceeded")

	// ErrInvalidManifest reports a manifest that fails validation; the
	// message names the offending field.
	ErrInvalidManifest = errors.New("checkpoint: invalid manifest")

	// ErrMissingChunk reports that a chunk a manifest references is not
	// in the chunk store; the message names the chunk and the file.
	ErrMissingChunk = errors.New("checkpoint: missing chunk")

	// ErrNoSpace reports a restore that would not fit in the free space
	// of its file system.
	ErrNoSpace = errors.New("checkpoint: not enough free space")

	// ErrCorruptChunk reports a chunk whose bytes do not hash to its ID,
	// or chunks that do not add up to their file's size; the message
	// names the chunk and the file.
	ErrCorruptChunk = errors.New("checkpoint: corrupt chunk")
)

// limitErr returns an ErrLimit error naming the limit.
func limitErr(what string, got int64, name string, limit int64) error {
	return fmt.Errorf("%w: %s is %d, exceeds %s (%d)", ErrLimit, what, got, name, limit)
}

// invalidf returns an ErrInvalidManifest error naming the field.
func invalidf(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidManifest, field, fmt.Sprintf(format, args...))
}
