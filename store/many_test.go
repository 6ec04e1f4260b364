package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPutAllWritesEveryEntry(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		b := NewBucket[record](s, "recs")
		if err := b.Put("a", record{Name: "old"}); err != nil {
			t.Fatal(err)
		}
		err := b.PutAll([]Entry[record]{
			{Key: "a", Value: record{Name: "a", N: 1}},
			{Key: "", Value: record{Name: "bad"}},
			{Key: "b", Value: record{Name: "b", N: 2}},
		})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("PutAll with an empty key: %v, want ErrInvalid", err)
		}
		for k, want := range map[string]int{"a": 1, "b": 2} {
			v, ok, err := b.Get(k)
			if err != nil || !ok || v.N != want {
				t.Fatalf("Get(%s) = %+v, %v, %v", k, v, ok, err)
			}
		}
		if err := b.PutAll(nil); err != nil {
			t.Fatalf("PutAll(nil): %v", err)
		}
	})
}

// A set larger than one transaction is split, not refused.
func TestPutAllSplitsLargeSets(t *testing.T) {
	s := openMem(t)
	b := NewBucket[record](s, "big")
	big := strings.Repeat("x", 200<<10) // 5 MiB in all, above the 1.2 MiB batch limit
	var es []Entry[record]
	for i := range 25 {
		es = append(es, Entry[record]{Key: fmt.Sprintf("k%02d", i), Value: record{Name: big, N: i}})
	}
	if err := b.PutAll(es); err != nil {
		t.Fatalf("PutAll: %v", err)
	}
	if n, err := b.Count(""); err != nil || n != 25 {
		t.Fatalf("Count = %d, %v; want 25", n, err)
	}
}

func TestAppendLogsKeepsSequences(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		if _, err := s.AppendLog("a", []byte("a1")); err != nil {
			t.Fatal(err)
		}
		err := s.AppendLogs([]LogAppend{
			{Stream: "b", Data: []byte("b1")},
			{Stream: "a", Data: []byte("a2")},
			{Stream: "a", Data: nil}, // skipped
			{Stream: "b", Data: []byte("b2")},
			{Stream: "a", Data: []byte("a3")},
		})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("AppendLogs with an empty chunk: %v, want ErrInvalid", err)
		}
		if seq, err := s.AppendLog("a", []byte("a4")); err != nil || seq != 4 {
			t.Fatalf("AppendLog after AppendLogs: seq %d, %v; want 4", seq, err)
		}
		for stream, want := range map[string][]string{"a": {"a1", "a2", "a3", "a4"}, "b": {"b1", "b2"}} {
			chunks, _, err := s.ReadLog(stream, 1, 0)
			if err != nil || len(chunks) != len(want) {
				t.Fatalf("ReadLog(%s) = %d chunks, %v", stream, len(chunks), err)
			}
			for i, c := range chunks {
				if c.Seq != uint64(i+1) || !bytes.Equal(c.Data, []byte(want[i])) {
					t.Fatalf("%s chunk %d = %d %q, want %d %q", stream, i, c.Seq, c.Data, i+1, want[i])
				}
			}
		}
	})
}

func TestAppendLogsSplitsLargeSets(t *testing.T) {
	s := openMem(t)
	chunk := bytes.Repeat([]byte("y"), MaxLogChunkSize)
	var cs []LogAppend
	for i := range 40 {
		cs = append(cs, LogAppend{Stream: fmt.Sprintf("s%d", i%3), Data: chunk})
	}
	if err := s.AppendLogs(cs); err != nil {
		t.Fatalf("AppendLogs: %v", err)
	}
	for i := range 3 {
		seq, err := s.AppendLog(fmt.Sprintf("s%d", i), []byte("z"))
		want := uint64(len(cs)/3 + 1)
		if i < len(cs)%3 {
			want++
		}
		if err != nil || seq != want {
			t.Fatalf("stream s%d: next seq %d, %v; want %d", i, seq, err, want)
		}
	}
}
