package store

// PutBlob stores data (at most MaxBlobSize bytes) under key, replacing any
// previous blob. The store does not retain data after PutBlob returns.
func (s *Store) PutBlob(key string, data []byte) error {
	op := "put blob " + key
	if len(data) > MaxBlobSize {
		return tooLarge(op, "blob", len(data), "MaxBlobSize", MaxBlobSize)
	}
	return s.putRaw(op, blobNS, key, data)
}

// GetBlob returns a copy of the blob stored under key; ok is false if
// there is none.
func (s *Store) GetBlob(key string) (data []byte, ok bool, err error) {
	return s.getRaw("get blob "+key, blobNS, key)
}

// HasBlob reports whether a blob is stored under key, without reading it.
func (s *Store) HasBlob(key string) (bool, error) {
	return s.hasRaw("has blob "+key, blobNS, key)
}

// DeleteBlob removes the blob under key; deleting a missing blob is not an
// error.
func (s *Store) DeleteBlob(key string) error {
	return s.deleteRaw("delete blob "+key, blobNS, key)
}
