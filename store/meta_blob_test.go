package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMeta(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		if _, ok, err := s.GetMeta("node-id"); err != nil || ok {
			t.Fatalf("missing meta: ok %v, err %v", ok, err)
		}
		for _, v := range []string{"peer-1", "", "peer-2"} {
			if err := s.PutMeta("node-id", v); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := s.GetMeta("node-id"); err != nil || !ok || got != v {
				t.Fatalf("GetMeta = %q, %v, %v; want %q", got, ok, err, v)
			}
		}
		if err := s.DeleteMeta("node-id"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.GetMeta("node-id"); ok {
			t.Fatal("meta not deleted")
		}
	})
}

func TestBlobs(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		key := "sha256:0123"
		if ok, err := s.HasBlob(key); err != nil || ok {
			t.Fatalf("HasBlob(missing) = %v, %v", ok, err)
		}
		data := bytes.Repeat([]byte{0, 1, 2, 0xff}, MaxBlobSize/4)
		if err := s.PutBlob(key, data); err != nil {
			t.Fatalf("PutBlob of MaxBlobSize bytes: %v", err)
		}
		got, ok, err := s.GetBlob(key)
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Fatalf("GetBlob: ok %v, err %v, equal %v", ok, err, bytes.Equal(got, data))
		}
		got[0] = 42 // the copy is the caller's
		if again, _, _ := s.GetBlob(key); again[0] != 0 {
			t.Fatal("GetBlob returned shared memory")
		}
		if ok, err := s.HasBlob(key); err != nil || !ok {
			t.Fatalf("HasBlob = %v, %v", ok, err)
		}
		if err := s.PutBlob("empty", nil); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.GetBlob("empty"); err != nil || !ok || got == nil || len(got) != 0 {
			t.Fatalf("empty blob = %v, %v, %v", got, ok, err)
		}
		err = s.PutBlob("big", make([]byte, MaxBlobSize+1))
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxBlobSize") {
			t.Fatalf("oversized blob: err = %v", err)
		}
		if err := s.DeleteBlob(key); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.HasBlob(key); ok {
			t.Fatal("blob not deleted")
		}
	})
}
