package data

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/runtime/checkpoint"
	"github.com/agora-sched/agora/store"
)

// Where data lives in the node's store.
const (
	chunkPrefix    = "dt/" // chunk blobs, by ID
	manifestPrefix = "dm/" // manifest parts, "dm/ID/N"
	chunkBucket    = "datachunks"
	recordBucket   = "data"
	// partSize is the most manifest bytes in one blob.
	partSize = store.MaxBlobSize
	// chunkGrace spares a chunk a peer's fetch or an upload just wrote
	// from GC while its manifest is on its way.
	chunkGrace = 10 * time.Minute
)

// Kinds of data a node keeps.
const (
	KindOutput = "output" // a task's outputs, made here or copied here
	KindUpload = "upload" // an input uploaded by a client
	KindCache  = "cache"  // fetched for a task that ran here
)

// Record says why a manifest is kept, and until when.
type Record struct {
	Job     string    `json:"job,omitempty"`
	Kind    string    `json:"kind"`
	Bytes   int64     `json:"bytes"`
	From    string    `json:"from,omitempty"` // the peer it came from; "" this node
	Parts   int       `json:"parts"`
	Size    int       `json:"size"` // the encoded manifest's bytes
	Expires time.Time `json:"expires"`
}

type chunkRec struct {
	Written int64 `json:"written"` // Unix ns
}

// Store keeps data chunks as store blobs and manifests with their
// records. It implements checkpoint.ChunkStore. Fetches and restores
// hold gcMu for reading, GC for writing.
type Store struct {
	s       *store.Store
	chunks  *store.Bucket[chunkRec]
	records *store.Bucket[Record]
	gcMu    sync.RWMutex

	heldMu sync.RWMutex
	held   map[string]bool // manifests kept, each kept whole
	recent []string        // the last maxRecent of them kept, newest first
}

// maxRecent is how many recently kept manifests a node names (Recent).
const maxRecent = 64

// Recent lists up to n of the manifests kept most recently, newest
// first: what a node's advert says it holds.
func (d *Store) Recent(n int) []string {
	if d == nil {
		return nil
	}
	d.heldMu.RLock()
	defer d.heldMu.RUnlock()
	return append([]string(nil), d.recent[:min(n, len(d.recent))]...)
}

// NewStore opens the data kept in s.
func NewStore(s *store.Store) *Store {
	d := &Store{s: s, chunks: store.NewBucket[chunkRec](s, chunkBucket), records: store.NewBucket[Record](s, recordBucket), held: map[string]bool{}}
	_ = d.records.Scan("", func(id string, _ Record) (bool, error) {
		d.held[id] = true
		return true, nil
	})
	return d
}

// Holds reports whether a manifest is kept here, with all its chunks
// (every manifest is kept only once its chunks are). Safe for concurrent
// use, and cheap: the market asks it for every bid.
func (d *Store) Holds(id string) bool {
	if d == nil {
		return false
	}
	d.heldMu.RLock()
	defer d.heldMu.RUnlock()
	return d.held[id]
}

func (d *Store) setHeld(id string, ok bool) {
	d.heldMu.Lock()
	defer d.heldMu.Unlock()
	out := d.recent[:0:0]
	if ok {
		d.held[id] = true
		out = append(out, id)
	} else {
		delete(d.held, id)
	}
	for _, r := range d.recent {
		if r != id && len(out) < maxRecent {
			out = append(out, r)
		}
	}
	d.recent = out
}

// RLock holds off GC while a fetch or restore relies on chunks whose
// manifest is not kept yet.
func (d *Store) RLock()   { d.gcMu.RLock() }
func (d *Store) RUnlock() { d.gcMu.RUnlock() }

// ValidID reports whether id is a manifest or chunk ID (spec.ValidDataID).
func ValidID(id string) bool { return spec.ValidDataID(id) }

// Has reports whether a chunk is held.
func (d *Store) Has(id string) (bool, error) {
	if !ValidID(id) {
		return false, nil
	}
	return d.s.HasBlob(chunkPrefix + id)
}

// Put stores a chunk after checking that it hashes to id; the index entry
// goes first, so GC finds any blob written.
func (d *Store) Put(id string, b []byte) error {
	if len(b) > checkpoint.MaxChunkSize {
		return fmt.Errorf("data: chunk %s: %d bytes, over %d", id, len(b), checkpoint.MaxChunkSize)
	}
	if !ValidID(id) || checkpoint.ID(b) != id {
		return fmt.Errorf("data: chunk %.16s…: bytes do not hash to the ID", id)
	}
	if err := d.chunks.Put(id, chunkRec{Written: time.Now().UnixNano()}); err != nil {
		return err
	}
	return d.s.PutBlob(chunkPrefix+id, b)
}

// Get returns a chunk's bytes.
func (d *Store) Get(id string) ([]byte, bool, error) {
	if !ValidID(id) {
		return nil, false, nil
	}
	return d.s.GetBlob(chunkPrefix + id)
}

// Delete removes a chunk.
func (d *Store) Delete(id string) error {
	if err := d.s.DeleteBlob(chunkPrefix + id); err != nil {
		return err
	}
	return d.chunks.Delete(id)
}

// Keep stores a manifest, whose ID is the hash of raw, with its record;
// a record already held is extended to the later expiry.
func (d *Store) Keep(raw []byte, r Record) (string, error) {
	id := checkpoint.ID(raw)
	if _, err := checkpoint.DecodeManifest(raw); err != nil {
		return "", err
	}
	old, ok, err := d.records.Get(id)
	if err != nil {
		return "", err
	}
	if ok {
		if old.Expires.After(r.Expires) {
			r.Expires = old.Expires
		}
		if old.Kind != KindCache {
			r.Kind, r.Job = old.Kind, old.Job
		}
	}
	r.Size = len(raw)
	r.Parts = (len(raw) + partSize - 1) / partSize
	for i := range r.Parts {
		part := raw[i*partSize : min(len(raw), (i+1)*partSize)]
		if err := d.s.PutBlob(manifestPrefix+id+"/"+strconv.Itoa(i), part); err != nil {
			return "", err
		}
	}
	if err := d.records.Put(id, r); err != nil {
		return "", err
	}
	d.setHeld(id, true)
	return id, nil
}

// Manifest returns a kept manifest, its encoding and record.
func (d *Store) Manifest(id string) (checkpoint.Manifest, []byte, Record, bool, error) {
	r, ok, err := d.records.Get(id)
	if err != nil || !ok || !ValidID(id) {
		return checkpoint.Manifest{}, nil, r, false, err
	}
	raw := make([]byte, 0, r.Size)
	for i := range r.Parts {
		part, ok, err := d.s.GetBlob(manifestPrefix + id + "/" + strconv.Itoa(i))
		if err != nil || !ok {
			return checkpoint.Manifest{}, nil, r, false, err
		}
		raw = append(raw, part...)
	}
	if checkpoint.ID(raw) != id {
		return checkpoint.Manifest{}, nil, r, false, fmt.Errorf("data: manifest %.16s… is damaged in the store", id)
	}
	m, err := checkpoint.DecodeManifest(raw)
	return m, raw, r, err == nil, err
}

// Complete reports whether a manifest and every chunk it lists are held.
func (d *Store) Complete(id string) bool {
	m, _, _, ok, err := d.Manifest(id)
	if err != nil || !ok {
		return false
	}
	lack, err := checkpoint.Missing(m, d)
	return err == nil && len(lack) == 0
}

// drop forgets a manifest.
func (d *Store) drop(id string, r Record) error {
	d.setHeld(id, false)
	for i := range r.Parts {
		if err := d.s.DeleteBlob(manifestPrefix + id + "/" + strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return d.records.Delete(id)
}

// Sweep forgets the manifests expired by now, then deletes the chunks no
// kept manifest lists, sparing those written within chunkGrace. It
// returns how many of each went.
func (d *Store) Sweep(now time.Time) (manifests, chunks int, err error) {
	d.gcMu.Lock()
	defer d.gcMu.Unlock()
	var keep []checkpoint.Manifest
	var expired []string
	recs := map[string]Record{}
	err = d.records.Scan("", func(id string, r Record) (bool, error) {
		if now.After(r.Expires) {
			expired = append(expired, id)
			recs[id] = r
			return true, nil
		}
		m, _, _, ok, err := d.Manifest(id)
		if err != nil || !ok {
			expired = append(expired, id)
			recs[id] = r
			return true, nil
		}
		keep = append(keep, m)
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	for _, id := range expired {
		if err := d.drop(id, recs[id]); err != nil {
			return 0, 0, err
		}
	}
	var all []string
	err = d.chunks.Scan("", func(id string, c chunkRec) (bool, error) {
		if now.Sub(time.Unix(0, c.Written)) > chunkGrace {
			all = append(all, id)
		}
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	drop := checkpoint.GC(keep, all)
	for _, id := range drop {
		if err := d.Delete(id); err != nil {
			return 0, 0, err
		}
	}
	return len(expired), len(drop), nil
}

// Usage is the bytes of the manifests kept: all of them, and those kept
// for other nodes (offered by a peer).
type Usage struct{ All, Others int64 }

// Usage adds up the bytes of the manifests kept.
func (d *Store) Usage() (Usage, error) {
	var u Usage
	err := d.records.Scan("", func(_ string, r Record) (bool, error) {
		u.All += r.Bytes
		if r.From != "" && r.Kind != KindCache {
			u.Others += r.Bytes
		}
		return true, nil
	})
	return u, err
}
