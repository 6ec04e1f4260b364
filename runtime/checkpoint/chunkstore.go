package checkpoint

import (
	"fmt"
	"slices"
	"sync"
)

// ChunkStore holds chunks by ID. The package defines it and ships
// [MemStore]; the node implements it over store blobs and over the network.
// Implementations must be safe for concurrent use.
type ChunkStore interface {
	// Has reports whether the chunk is present, without reading it.
	Has(id string) (bool, error)
	// Put stores data under id. data holds at most MaxChunkSize bytes and
	// hashes to id; Put must not retain data after it returns.
	Put(id string, data []byte) error
	// Get returns the chunk's bytes; ok is false when it is absent. The
	// caller may keep and modify the returned slice.
	Get(id string) (data []byte, ok bool, err error)
	// Delete removes the chunk; deleting an absent chunk is not an error.
	Delete(id string) error
}

// MemStore is an in-memory ChunkStore for tests and tools. The zero value
// is ready to use. It stores exactly what it is given: Put does not check
// that data hashes to id, so tests can plant corrupt chunks.
type MemStore struct {
	mu     sync.Mutex
	chunks map[string][]byte
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{} }

// Has reports whether id is stored.
func (s *MemStore) Has(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.chunks[id]
	return ok, nil
}

// Put stores a copy of data under id. Like the node's blob store, it
// refuses more than MaxChunkSize bytes.
func (s *MemStore) Put(id string, data []byte) error {
	if len(data) > MaxChunkSize {
		return fmt.Errorf("checkpoint: memstore: put %s: %d bytes exceeds MaxChunkSize (%d)",
			id, len(data), MaxChunkSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chunks == nil {
		s.chunks = make(map[string][]byte)
	}
	s.chunks[id] = slices.Clone(data)
	return nil
}

// Get returns a copy of the chunk stored under id.
func (s *MemStore) Get(id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.chunks[id]
	if !ok {
		return nil, false, nil
	}
	return slices.Clone(data), true, nil
}

// Delete removes the chunk stored under id, if any.
func (s *MemStore) Delete(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.chunks, id)
	return nil
}

// IDs returns the IDs of the stored chunks in ascending order.
func (s *MemStore) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.chunks))
	for id := range s.chunks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Size returns the number of stored chunks and their total size in bytes.
func (s *MemStore) Size() (chunks int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, data := range s.chunks {
		bytes += int64(len(data))
	}
	return len(s.chunks), bytes
}
