package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agora-sched/agora/runtime/checkpoint"
	"github.com/agora-sched/agora/store"
)

// Where checkpoints live in the node's store.
const (
	// chunkPrefix starts the blob key of every checkpoint chunk.
	chunkPrefix = "ck/"
	// chunkBucket indexes the chunks held, so GC can list them (the store
	// cannot list blobs).
	chunkBucket = "ckchunks"
	// manifestBucket holds the newest manifest of each task replica this
	// node took or keeps for others, keyed "job/task/replica".
	manifestBucket = "checkpoints"
)

// Limits of the checkpoint store.
const (
	// MaxKeptManifest is the largest encoded manifest kept: a bucket value
	// holds at most store.MaxValueSize bytes, the record's other fields
	// included. It allows checkpoints of about 2 GiB.
	MaxKeptManifest = store.MaxValueSize - 4<<10
	// chunkGrace protects a chunk a peer put or asked about from GC for a
	// while: its manifest follows the chunks.
	chunkGrace = 2 * time.Minute
	// manifestTTL is how long a manifest not updated is kept.
	manifestTTL = 10 * time.Minute
)

// chunkRec is a chunk's index entry.
type chunkRec struct {
	// Remote is when a peer last put the chunk or asked whether this node
	// has it (Unix ns); zero for chunks only this node's snapshots wrote.
	Remote int64 `json:"remote,omitempty"`
}

// ckRecord is the newest manifest of one task replica.
type ckRecord struct {
	// From is the peer that pushed it; empty for this node's own.
	From     string          `json:"from,omitempty"`
	Seq      uint64          `json:"seq"`
	Updated  time.Time       `json:"updated"`
	Manifest json.RawMessage `json:"manifest"`
}

// Store keeps checkpoint chunks as store blobs and manifests in a
// bucket. It implements checkpoint.ChunkStore. Snapshots and restores hold
// gcMu for reading, GC holds it for writing: a snapshot may rely on a
// chunk only its own, not yet kept, manifest references.
type Store struct {
	s         *store.Store
	index     *store.Bucket[chunkRec]
	manifests *store.Bucket[ckRecord]
	gcMu      sync.RWMutex

	countMu sync.Mutex
	perFrom map[string]int // manifests held per maker; nil: not counted
}

// RLock holds off garbage collection while a snapshot or a restore relies
// on chunks only its own, not yet kept, manifest references; RUnlock
// lets it run again.
func (c *Store) RLock()   { c.gcMu.RLock() }
func (c *Store) RUnlock() { c.gcMu.RUnlock() }

func NewStore(s *store.Store) *Store {
	return &Store{s: s, index: store.NewBucket[chunkRec](s, chunkBucket), manifests: store.NewBucket[ckRecord](s, manifestBucket)}
}

// ErrNotNewer means a manifest was not kept because one at least as new
// is held.
var ErrNotNewer = errors.New("not newer than the manifest held")

// validChunkID reports whether id is a lowercase hex SHA-256.
func validChunkID(id string) bool {
	if len(id) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkChunk fails unless data is a chunk that hashes to id.
func checkChunk(id string, data []byte) error {
	if !validChunkID(id) {
		return fmt.Errorf("invalid chunk id %q", clipID(id))
	}
	if len(data) > checkpoint.MaxChunkSize {
		return fmt.Errorf("chunk %s: %d bytes exceeds %d", id, len(data), checkpoint.MaxChunkSize)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != id {
		return fmt.Errorf("chunk %s: data does not hash to its id", id)
	}
	return nil
}

func clipID(id string) string {
	if len(id) > 80 {
		return id[:80] + "…"
	}
	return id
}

// Has reports whether the chunk is held.
func (c *Store) Has(id string) (bool, error) {
	if !validChunkID(id) {
		return false, nil
	}
	return c.s.HasBlob(chunkPrefix + id)
}

// Put stores a chunk after checking that it hashes to id; the index entry
// is written first, so GC finds any blob that was written.
func (c *Store) Put(id string, data []byte) error {
	if err := checkChunk(id, data); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	err := c.index.Update(id, func(*chunkRec, bool) (bool, error) { return true, nil })
	if err != nil {
		return err
	}
	return c.s.PutBlob(chunkPrefix+id, data)
}

// Get returns a chunk's bytes.
func (c *Store) Get(id string) ([]byte, bool, error) {
	if !validChunkID(id) {
		return nil, false, nil
	}
	return c.s.GetBlob(chunkPrefix + id)
}

// Delete removes a chunk and its index entry.
func (c *Store) Delete(id string) error {
	if err := c.s.DeleteBlob(chunkPrefix + id); err != nil {
		return err
	}
	return c.index.Delete(id)
}

// putRemote stores a chunk a peer pushed, marking it recent.
func (c *Store) putRemote(id string, data []byte, now time.Time) error {
	if err := c.Put(id, data); err != nil {
		return err
	}
	return c.index.Put(id, chunkRec{Remote: now.UnixNano()})
}

// missing returns which of ids are not held and marks the held ones
// recent, so that GC spares them until the peer's manifest arrives.
func (c *Store) missing(ids []string, now time.Time) ([]string, error) {
	var lack, have []string
	for _, id := range ids {
		ok, err := c.Has(id)
		if err != nil {
			return nil, err
		}
		if ok {
			have = append(have, id)
		} else {
			lack = append(lack, id)
		}
	}
	for len(have) > 0 {
		part := have[:min(len(have), 1024)]
		have = have[len(part):]
		err := c.s.Batch(func(b *store.Batch) error {
			for _, id := range part {
				if err := store.BatchPut(b, c.index, id, chunkRec{Remote: now.UnixNano()}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return lack, nil
}

// Held is a manifest held for a task replica, and who made it.
type Held struct {
	M   checkpoint.Manifest
	Raw []byte
	// From is the peer that pushed it; empty when this node made it.
	From string
}

// A task replica's manifests are held one per maker: the slot of key
// made by from. One peer's pushes cannot displace another's.
func slot(key, from string) string { return key + "@" + from }

// slotKey is the task replica of a slot.
func slotKey(s string) string {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return s[:i]
	}
	return s
}

// Manifest returns the newest manifest held for key (highest Seq, which
// starts with its epoch) among those allow accepts by maker ("" for this
// node) and epoch; allow nil accepts every one.
func (c *Store) Manifest(key string, allow func(from string, epoch uint64) bool) (Held, bool, error) {
	var best ckRecord
	found := false
	err := c.manifests.Scan(key+"@", func(_ string, r ckRecord) (bool, error) {
		if (!found || r.Seq > best.Seq) && (allow == nil || allow(r.From, r.Seq>>32)) {
			best, found = r, true
		}
		return true, nil
	})
	if err != nil || !found {
		return Held{}, false, err
	}
	m, err := checkpoint.DecodeManifest(best.Manifest)
	if err != nil {
		return Held{}, false, err
	}
	return Held{M: m, Raw: best.Manifest, From: best.From}, true, nil
}

// Keep stores m (encoded as raw), made by from ("" for this node), as
// key's manifest of that maker unless one with the same or a higher Seq
// is held there; then it returns ErrNotNewer.
func (c *Store) Keep(key, from string, m checkpoint.Manifest, raw []byte, now time.Time) error {
	if len(raw) > MaxKeptManifest {
		return fmt.Errorf("manifest of %d bytes exceeds the %d bytes a node keeps", len(raw), MaxKeptManifest)
	}
	added := false
	err := c.manifests.Update(slot(key, from), func(v *ckRecord, exists bool) (bool, error) {
		if exists && v.Seq >= m.Seq {
			return false, ErrNotNewer
		}
		*v = ckRecord{From: from, Seq: m.Seq, Updated: now, Manifest: raw}
		added = !exists
		return true, nil
	})
	if err == nil && added {
		c.counted(&from)
	}
	return err
}

// Drop forgets key's manifests; their chunks go at the next GC.
func (c *Store) Drop(key string) error {
	var slots []string
	err := c.manifests.Scan(key+"@", func(s string, _ ckRecord) (bool, error) {
		slots = append(slots, s)
		return true, nil
	})
	for _, s := range slots {
		if err == nil {
			err = c.manifests.Delete(s)
		}
	}
	c.counted(nil)
	return err
}

// countFrom is how many manifests from pushed that this node holds. The
// counts are taken by one scan and kept up to date by Keep; a deletion
// has them taken again.
func (c *Store) countFrom(from string) (int, error) {
	c.countMu.Lock()
	defer c.countMu.Unlock()
	if c.perFrom == nil {
		per := map[string]int{}
		err := c.manifests.Scan("", func(_ string, r ckRecord) (bool, error) {
			per[r.From]++
			return true, nil
		})
		if err != nil {
			return 0, err
		}
		c.perFrom = per
	}
	return c.perFrom[from], nil
}

// counted adjusts the per-maker counts: one more from from, or, with
// from nil, unknown again.
func (c *Store) counted(from *string) {
	c.countMu.Lock()
	defer c.countMu.Unlock()
	if from == nil {
		c.perFrom = nil
	} else if c.perFrom != nil {
		c.perFrom[*from]++
	}
}

// count is the number of manifests held.
func (c *Store) count() (int, error) { return c.manifests.Count("") }

// GC deletes the chunks no held manifest references, sparing those a
// peer put or asked about within chunkGrace. It returns how many went.
func (c *Store) GC(now time.Time) (int, error) {
	c.gcMu.Lock()
	defer c.gcMu.Unlock()
	var keep []checkpoint.Manifest
	err := c.manifests.Scan("", func(key string, r ckRecord) (bool, error) {
		m, err := checkpoint.DecodeManifest(r.Manifest)
		if err != nil {
			log.Warnw("dropping an unreadable checkpoint manifest", "key", key, "err", err)
			_ = c.manifests.Delete(key)
			c.counted(nil)
			return true, nil
		}
		keep = append(keep, m)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	var all []string
	err = c.index.Scan("", func(id string, r chunkRec) (bool, error) {
		if r.Remote == 0 || now.Sub(time.Unix(0, r.Remote)) > chunkGrace {
			all = append(all, id)
		}
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	drop := checkpoint.GC(keep, all)
	for _, id := range drop {
		if err := c.Delete(id); err != nil {
			return 0, err
		}
	}
	return len(drop), nil
}

// Sweep drops the manifests not updated for manifestTTL, except those
// whose task replica runs here (active), then collects garbage.
func (c *Store) Sweep(now time.Time, active func(key string) bool) (manifests, chunks int, err error) {
	var stale []string
	err = c.manifests.Scan("", func(key string, r ckRecord) (bool, error) {
		if now.Sub(r.Updated) > manifestTTL && !active(slotKey(key)) {
			stale = append(stale, key)
		}
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	for _, k := range stale {
		// Re-checked inside the update: a peer may have refreshed it.
		err := c.manifests.Update(k, func(v *ckRecord, exists bool) (bool, error) {
			return exists && (now.Sub(v.Updated) <= manifestTTL || active(slotKey(k))), nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	if len(stale) > 0 {
		c.counted(nil)
	}
	chunks, err = c.GC(now)
	return len(stale), chunks, err
}
