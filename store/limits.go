package store

// Size limits. Every value that enters the store is bounded; exceeding a
// limit returns an error that matches ErrTooLarge and names the limit.
//
// The value limits are bound by in-memory mode, where badger keeps values
// inside the LSM tree: it only accepts values smaller than its 1 MiB
// maximum value threshold (a value of exactly 1 MiB crashes badger
// v4.9.6), and one transaction must fit in 15% of the 8 MiB memtable
// (about 1.2 MiB). 512 KiB keeps a clear margin and lets two maximal values
// share a transaction. On disk, values of 64 KiB and more go to the value
// log and only the limits below apply.
const (
	// MaxKeySize is the maximum length in bytes of a bucket key, metadata
	// key, blob key or log stream name.
	MaxKeySize = 1 << 10 // 1 KiB

	// MaxValueSize is the maximum size in bytes of one encoded bucket
	// value (JSON) or one metadata value.
	MaxValueSize = 512 << 10 // 512 KiB

	// MaxBlobSize is the maximum size in bytes of one raw blob. Checkpoint
	// chunking must produce chunks no larger than this.
	MaxBlobSize = 512 << 10 // 512 KiB

	// MaxLogChunkSize is the maximum size in bytes of one appended log
	// chunk.
	MaxLogChunkSize = 64 << 10 // 64 KiB

	// DefaultLogReadBytes is the byte budget ReadLog uses when the caller
	// passes a non-positive maxBytes.
	DefaultLogReadBytes = 1 << 20 // 1 MiB

	// MaxLogReadBytes caps the byte budget of a single ReadLog call; larger
	// requests are clamped to it.
	MaxLogReadBytes = 4 << 20 // 4 MiB

	// MaxListEntries is the maximum number of entries Bucket.List returns;
	// use Bucket.Scan to walk larger ranges.
	MaxListEntries = 100_000
)

// listLimit is the limit List enforces; it is MaxListEntries except in
// tests, which lower it to stay fast.
var listLimit = MaxListEntries

// Internal bounds that are not part of the API.
const (
	// maxUpdateAttempts bounds the retries of Bucket.Update on badger
	// transaction conflicts.
	maxUpdateAttempts = 16

	// maxGCRounds bounds the value-log GC rounds of one RunGC call.
	maxGCRounds = 64

	// gcDiscardRatio is the fraction of stale data a value-log file must
	// hold before RunGC rewrites it.
	gcDiscardRatio = 0.5
)
