package store

import (
	"errors"

	badger "github.com/dgraph-io/badger/v4"
)

// GetMeta returns the metadata value stored under key; ok is false if
// there is none.
func (s *Store) GetMeta(key string) (value string, ok bool, err error) {
	op := "get meta " + key
	data, ok, err := s.getRaw(op, metaNS, key)
	return string(data), ok, err
}

// PutMeta stores a metadata value (at most MaxValueSize bytes) under key.
func (s *Store) PutMeta(key, value string) error {
	op := "put meta " + key
	if len(value) > MaxValueSize {
		return tooLarge(op, "value", len(value), "MaxValueSize", MaxValueSize)
	}
	return s.putRaw(op, metaNS, key, []byte(value))
}

// DeleteMeta removes the metadata value under key; deleting a missing key
// is not an error.
func (s *Store) DeleteMeta(key string) error {
	return s.deleteRaw("delete meta "+key, metaNS, key)
}

// getRaw returns a copy of the value of ns+key.
func (s *Store) getRaw(op, ns, key string) ([]byte, bool, error) {
	if err := checkKey(op, key); err != nil {
		return nil, false, err
	}
	if err := s.enter(op); err != nil {
		return nil, false, err
	}
	defer s.leave()
	var data []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(ns + key))
		if err != nil {
			return err
		}
		data, err = item.ValueCopy(nil)
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, wrapErr(op, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, true, nil
}

// hasRaw reports whether ns+key exists without reading its value.
func (s *Store) hasRaw(op, ns, key string) (bool, error) {
	if err := checkKey(op, key); err != nil {
		return false, err
	}
	if err := s.enter(op); err != nil {
		return false, err
	}
	defer s.leave()
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(ns + key))
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, wrapErr(op, err)
	}
	return true, nil
}

// putRaw stores data under ns+key. Size limits are checked by the caller.
func (s *Store) putRaw(op, ns, key string, data []byte) error {
	if err := checkKey(op, key); err != nil {
		return err
	}
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()
	return wrapErr(op, s.update(func(txn *badger.Txn) error {
		return txn.Set([]byte(ns+key), data)
	}))
}

// deleteRaw removes ns+key.
func (s *Store) deleteRaw(op, ns, key string) error {
	if err := checkKey(op, key); err != nil {
		return err
	}
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()
	return wrapErr(op, s.update(func(txn *badger.Txn) error {
		return txn.Delete([]byte(ns + key))
	}))
}
