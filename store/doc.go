// Package store is the node's embedded database.
//
// It owns the persistence of all node-local state: node metadata, the
// membership snapshot, job records and the copies held for other
// managers, execution records, job events, task logs, checkpoint chunks
// and manifests, and runtime history. Everything lives in one
// badger v4 database per node, opened with [Open] and released with
// [Store.Close].
//
// The package exposes a small typed API and never lets badger types leak
// out of it, so the storage engine can be tuned or replaced without touching
// callers:
//
//   - [Bucket] is a typed key/value namespace (JSON, or a codec of the
//     caller's: [Bucket.WithCodec]) with Put, Get, Delete, ordered List
//     and Scan, Count and an atomic read-modify-write Update.
//   - [Store.Batch] writes to several buckets all-or-nothing.
//   - [Store.GetMeta] and [Store.PutMeta] hold small string metadata.
//   - [Store.AppendLog] and [Store.ReadLog] implement append-only,
//     sequence-numbered log streams (task stdout/stderr).
//   - [Store.PutBlob] and [Store.GetBlob] hold raw byte blobs
//     (content-addressed checkpoint chunks).
//   - [Store.RunGC] and [Store.GCLoop] reclaim value-log space.
//
// Every size is bounded (see [MaxKeySize], [MaxValueSize], [MaxBlobSize],
// [MaxLogChunkSize], [MaxLogReadBytes] and [MaxListEntries]); exceeding a
// limit returns an error that matches [ErrTooLarge] and names the limit.
//
// Badger is tuned small because tests run dozens of nodes in one process;
// its logs are routed to the go-log logger "store" at warning level and
// above.
//
// On-disk key layout (an implementation detail, documented for debugging):
//
//	bkt/<bucket>/<key>          bucket records (JSON)
//	meta/<key>                  metadata strings
//	log/<stream>\x00<seq:8 BE>  log chunks
//	blob/<key>                  raw blobs
//
// The package must not import libp2p or the market package: it sits below
// both in the dependency graph.
package store
