// Package checkpoint takes and restores task checkpoints as
// content-addressed snapshots.
//
// A task writes its state under the directory named by
// AGORA_CHECKPOINT_DIR. [Snapshot] walks that directory, splits every
// regular file into content-defined chunks, writes to a [ChunkStore] the
// chunks it lacks and returns a [Manifest] that lists the tree and the
// chunks of each file. [Restore] rebuilds the directory from a manifest
// and the chunks; [Missing] says which chunks to fetch from a replica
// first; [GC] says which chunks no kept manifest needs any more. The
// package owns the format and the file-system work; where chunks and
// manifests live (store blobs, replica peers) is the caller's business.
// It must not import libp2p, badger or the market package; [ChunkStore]
// is the interface it needs, and [MemStore] implements it for tests.
//
// # The checkpoint format
//
// Chunks. A file's bytes are cut into chunks by a gear rolling hash
// (FastCDC style), so an insertion or deletion changes only the chunks
// around it and the rest keep their IDs. The hash is h = h<<1 + gear[b]
// over the bytes b of the chunk, with gear[i] the first 8 bytes (big
// endian) of SHA-256("agora-checkpoint-gear-v1" || byte(i)). No cut is
// made in the first [MinChunkSize] (64 KiB) bytes; hashing starts 64
// bytes before that point. After byte k of the chunk (chunk length k+1),
// a cut is made when the top 20 bits of h are zero while k+1 <
// [AvgChunkSize] (256 KiB), or the top 16 bits from then on; a chunk
// never exceeds [MaxChunkSize] (512 KiB, the store's blob limit). Every
// chunk but a file's last is therefore 64 to 512 KiB; on random data the
// mean is about 290 KiB and 3% of chunks reach the maximum. Empty files
// have no chunks. A chunk's ID is the lowercase hex SHA-256 of its bytes.
// Another implementation may chunk differently and stay compatible: only
// deduplication depends on the boundaries.
//
// Manifest. A manifest is a JSON object with these fields, in this order:
//
//	version      1
//	job, task    the task's job ID and name (1 to 256 bytes of UTF-8)
//	replica      the replica index (>= 0)
//	epoch        the scheduling epoch of the attempt that took it
//	seq          the snapshot's sequence number, monotonic per task
//	created_ns   creation time, ns since the Unix epoch, given by the caller
//	total_bytes  the sum of the files' sizes
//	entries      the tree, sorted by path in byte order ([] when empty)
//	skipped      paths left out, each {path, reason}, sorted by path;
//	             omitted when empty
//
// Each entry is {path, type, mode, size, mtime_ns, target, chunks}:
//
//	path      relative, slash-separated and clean: no leading or trailing
//	          slash, no empty, "." or ".." element
//	type      "file", "dir" or "symlink"
//	mode      the permission bits as an integer (420 is 0644); setuid,
//	          setgid and sticky bits are not recorded; 0 for symlinks
//	size      a file's size in bytes; 0 for dirs and symlinks
//	mtime_ns  modification time in ns since the Unix epoch; 0 for symlinks
//	target    a symlink's target, verbatim (omitted when empty)
//	chunks    a file's chunk IDs in order (omitted when empty)
//
// Every entry's parent directory is itself a "dir" entry (the checkpoint
// directory itself has none), so no entry lies beneath a file or a
// symlink. Paths and targets are at most [MaxPathLen] bytes of UTF-8;
// names that are not valid UTF-8 are skipped. A file of n bytes has
// between ceil(n / 512 KiB) and n chunks, and no chunk is listed more
// than [MaxChunkRefs] times in a manifest (a small manifest must not
// make a restore write gigabytes). A symlink's target is relative and,
// resolved from the link's directory one element at a time, stays inside
// the checkpoint directory without passing through another symlink of
// the manifest (whose target would change what a later ".." means). A
// manifest holds at most [MaxEntries] entries and skipped paths together,
// [MaxTotalBytes] of files, and encodes to at most [MaxManifestSize]
// bytes. A decoder
// rejects unknown fields, other versions and anything above, naming the
// field.
//
// A manifest is not itself a chunk. At about 70 bytes per chunk
// reference, a checkpoint of more than about 2 GiB has a manifest larger
// than the store's 512 KiB value limit; the caller keeps manifests where
// that fits.
//
// The canonical encoding is the one [EncodeManifest] writes: the fields
// in the order above, target, chunks and skipped omitted when empty, no
// insignificant whitespace, strings escaped as Go's encoding/json does
// without HTML escaping, no trailing newline. A manifest's ID is the
// lowercase hex SHA-256 of its canonical encoding. Unchanged contents
// and metadata give the same manifest ID.
//
// # Snapshots
//
// Snapshot records regular files, directories and symlinks; symlinks are
// never followed, and every access goes through an os.Root, so a task
// cannot make the node read outside its directory. Special files are
// recorded as skipped, and so are symlinks whose targets lead outside
// the directory (a restore would refuse them). A file that vanishes, or whose size or
// modification time changes while it is read, is read once more; if that
// fails too it is recorded as skipped with the reason. Limits
// ([MaxEntries], [MaxTotalBytes], [MaxPathLen], [MaxManifestSize]) fail
// the snapshot with an error naming the limit. Snapshot reads no clock:
// the caller passes the creation time in [Meta].
//
// The caller's duties, in order: take the snapshot; persist the manifest
// (its chunks are already in the store); push new chunks and then the
// manifest to replicas; only then drop older manifests and run GC. GC
// must not run on a store while a snapshot or restore on that store is in
// progress: a snapshot may rely on a chunk that only its own, not yet
// kept, manifest references.
//
// # Restores
//
// Restore makes the destination contain exactly the snapshot: stale
// entries are removed, files are written to a temporary file in their
// directory (named .agora-restore-*) and renamed into place after every
// chunk's hash is checked, then modes and times are set (directories
// last, children before parents). Symlinks get the recorded target and
// the time of their creation. Every operation goes through an os.Root on
// the destination, on top of the manifest's own path checks. All chunks
// are checked present, the destination checked not to be a symlink (a
// task could plant one to have what it points to deleted as stale), and
// its file system checked to have room for the snapshot's bytes and 16
// MiB more ([ErrNoSpace]), before the destination is touched. The
// caller's context cancels a restore between chunks. A restore that
// fails later leaves the destination partly restored but never with a
// torn file, and may be retried; files are not fsynced, since a crashed
// node restores again.
package checkpoint
