package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// appendN appends chunks "<stream>-<i>" for i in [0, n) and checks their
// sequence numbers continue from first.
func appendN(t *testing.T, s *Store, stream string, first uint64, n int) {
	t.Helper()
	for i := range n {
		seq, err := s.AppendLog(stream, fmt.Appendf(nil, "%s-%d", stream, i))
		if err != nil {
			t.Fatal(err)
		}
		if want := first + uint64(i); seq != want {
			t.Fatalf("AppendLog seq = %d, want %d", seq, want)
		}
	}
}

func TestLogAppendAndReadPaging(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		chunk := bytes.Repeat([]byte("x"), 100)
		for i := 1; i <= 10; i++ {
			seq, err := s.AppendLog("task/1/stdout", chunk)
			if err != nil || seq != uint64(i) {
				t.Fatalf("AppendLog = %d, %v; want %d", seq, err, i)
			}
		}

		tests := []struct {
			name     string
			from     uint64
			maxBytes int
			wantSeqs string
			wantNext uint64
		}{
			{"from zero, all", 0, 0, "[1 2 3 4 5 6 7 8 9 10]", 11},
			{"from one, 3 chunks", 1, 300, "[1 2 3]", 4},
			{"budget not a multiple", 4, 350, "[4 5 6]", 7},
			{"at least one chunk", 7, 1, "[7]", 8},
			{"tail", 9, 1000, "[9 10]", 11},
			{"past the end", 11, 1000, "[]", 11},
			{"far past the end", 500, 1000, "[]", 500},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				chunks, next, err := s.ReadLog("task/1/stdout", tt.from, tt.maxBytes)
				if err != nil {
					t.Fatal(err)
				}
				seqs := []uint64{}
				for _, c := range chunks {
					seqs = append(seqs, c.Seq)
					if !bytes.Equal(c.Data, chunk) {
						t.Fatalf("chunk %d data = %q", c.Seq, c.Data)
					}
				}
				if fmt.Sprint(seqs) != tt.wantSeqs || next != tt.wantNext {
					t.Fatalf("ReadLog(from %d, max %d) = %v next %d; want %s next %d",
						tt.from, tt.maxBytes, seqs, next, tt.wantSeqs, tt.wantNext)
				}
			})
		}

		// Paging with next visits every chunk exactly once.
		var all []uint64
		for next := uint64(0); ; {
			chunks, n, err := s.ReadLog("task/1/stdout", next, 250)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) == 0 {
				break
			}
			for _, c := range chunks {
				all = append(all, c.Seq)
			}
			next = n
		}
		if fmt.Sprint(all) != "[1 2 3 4 5 6 7 8 9 10]" {
			t.Fatalf("paged read = %v", all)
		}
	})
}

func TestLogStreamsAreIsolated(t *testing.T) {
	s := openMem(t)
	// "a" must not see "a/b" or "ab", and the other way round.
	streams := []string{"a", "a/b", "ab", "a\xff"}
	for i, st := range streams {
		appendN(t, s, st, 1, i+1)
	}
	for i, st := range streams {
		chunks, next, err := s.ReadLog(st, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) != i+1 || next != uint64(i+2) {
			t.Fatalf("stream %q: %d chunks, next %d; want %d, %d", st, len(chunks), next, i+1, i+2)
		}
		for j, c := range chunks {
			if want := fmt.Sprintf("%s-%d", st, j); string(c.Data) != want {
				t.Fatalf("stream %q chunk %d = %q, want %q", st, c.Seq, c.Data, want)
			}
		}
	}
}

func TestLogLimitsAndValidation(t *testing.T) {
	s := openMem(t)
	if _, err := s.AppendLog("s", make([]byte, MaxLogChunkSize)); err != nil {
		t.Fatalf("chunk of MaxLogChunkSize: %v", err)
	}
	tests := []struct {
		name    string
		stream  string
		data    []byte
		kind    error
		mention string
	}{
		{"chunk over limit", "s", make([]byte, MaxLogChunkSize+1), ErrTooLarge, "MaxLogChunkSize"},
		{"empty chunk", "s", nil, ErrInvalid, "empty chunk"},
		{"empty stream", "", []byte("x"), ErrInvalid, "empty key"},
		{"NUL in stream", "a\x00b", []byte("x"), ErrInvalid, "NUL"},
		{"stream over limit", strings.Repeat("s", MaxKeySize+1), []byte("x"), ErrTooLarge, "MaxKeySize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.AppendLog(tt.stream, tt.data)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.kind, tt.mention)
			}
		})
	}
	// Nothing but the first chunk was written, and the sequence has no gap.
	if seq, err := s.AppendLog("s", []byte("y")); err != nil || seq != 2 {
		t.Fatalf("next seq = %d, %v; want 2", seq, err)
	}
	// ReadLog clamps huge budgets instead of failing.
	if _, _, err := s.ReadLog("s", 0, 1<<40); err != nil {
		t.Fatal(err)
	}
}

func TestLogReadBudgetIsClamped(t *testing.T) {
	s := openMem(t)
	chunk := make([]byte, MaxLogChunkSize)
	n := MaxLogReadBytes/MaxLogChunkSize + 4
	for range n {
		if _, err := s.AppendLog("big", chunk); err != nil {
			t.Fatal(err)
		}
	}
	chunks, _, err := s.ReadLog("big", 0, 1<<40)
	if err != nil || len(chunks) != MaxLogReadBytes/MaxLogChunkSize {
		t.Fatalf("clamped read: %d chunks, %v; want %d", len(chunks), err, MaxLogReadBytes/MaxLogChunkSize)
	}
	chunks, _, err = s.ReadLog("big", 0, 0)
	if err != nil || len(chunks) != DefaultLogReadBytes/MaxLogChunkSize {
		t.Fatalf("default read: %d chunks, %v; want %d", len(chunks), err, DefaultLogReadBytes/MaxLogChunkSize)
	}
}

func TestLogSequenceSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	appendN(t, s, "job/7", 1, 5)
	appendN(t, s, "job/7/x", 1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDisk(t, dir)
	appendN(t, s, "job/7", 6, 3)   // recovered from the keys on first use
	appendN(t, s, "job/7/x", 3, 1) // a stream whose name extends another
	appendN(t, s, "fresh", 1, 1)
	chunks, next, err := s.ReadLog("job/7", 0, 0)
	if err != nil || len(chunks) != 8 || next != 9 {
		t.Fatalf("after reopen: %d chunks, next %d, %v", len(chunks), next, err)
	}
	for i, c := range chunks {
		if c.Seq != uint64(i+1) {
			t.Fatalf("chunk %d has seq %d", i, c.Seq)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDisk(t, dir)
	defer s.Close()
	appendN(t, s, "job/7", 9, 1)
}

func TestDeleteLogRestartsStream(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		// More chunks than DeleteLog removes per transaction.
		appendN(t, s, "doomed", 1, 2500)
		appendN(t, s, "doomed2", 1, 3)
		if err := s.DeleteLog("doomed"); err != nil {
			t.Fatal(err)
		}
		if chunks, _, err := s.ReadLog("doomed", 0, 0); err != nil || len(chunks) != 0 {
			t.Fatalf("after DeleteLog: %d chunks, %v", len(chunks), err)
		}
		if chunks, _, _ := s.ReadLog("doomed2", 0, 0); len(chunks) != 3 {
			t.Fatalf("DeleteLog touched another stream: %d chunks left", len(chunks))
		}
		appendN(t, s, "doomed", 1, 2)
		if err := s.DeleteLog("never-written"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLogConcurrentAppenders(t *testing.T) {
	s := openMem(t)
	const workers, perWorker = 8, 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				seq, err := s.AppendLog("shared", fmt.Appendf(nil, "%d:%d", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[seq] {
					t.Errorf("duplicate seq %d", seq)
				}
				seen[seq] = true
				mu.Unlock()
			}
		})
	}
	// A concurrent tailing reader must never skip a chunk.
	wg.Go(func() {
		next := uint64(1)
		for next <= workers*perWorker {
			chunks, n, err := s.ReadLog("shared", next, 0)
			if err != nil {
				t.Error(err)
				return
			}
			for _, c := range chunks {
				if c.Seq != next {
					t.Errorf("tail read seq %d, want %d", c.Seq, next)
					return
				}
				next++
			}
			if n != next {
				t.Errorf("next = %d, want %d", n, next)
				return
			}
		}
	})
	wg.Wait()
	chunks, next, err := s.ReadLog("shared", 0, MaxLogReadBytes)
	if err != nil || len(chunks) != workers*perWorker || next != workers*perWorker+1 {
		t.Fatalf("final read: %d chunks, next %d, %v", len(chunks), next, err)
	}
}

// TestDeleteLogForgetsStream: a deleted stream leaves no sequence state
// behind, and appenders racing a delete never reuse a sequence number
// that is still stored: after every delete, the stream's chunks are
// numbered 1, 2, … without a gap or a repeat.
func TestDeleteLogForgetsStream(t *testing.T) {
	s := openMem(t)
	for i := range 50 {
		name := fmt.Sprintf("events/j-%d", i)
		appendN(t, s, name, 1, 3)
		if err := s.DeleteLog(name); err != nil {
			t.Fatal(err)
		}
	}
	s.streams.mu.Lock()
	left := len(s.streams.m)
	s.streams.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d stream states left after every stream was deleted", left)
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := s.AppendLog("raced", fmt.Appendf(nil, "%d:%d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if err := s.DeleteLog("raced"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	chunks, _, err := s.ReadLog("raced", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		if c.Seq != uint64(i+1) {
			t.Fatalf("chunk %d has seq %d: %d chunks left after the races", i, c.Seq, len(chunks))
		}
	}
	seq, err := s.AppendLog("raced", []byte("last"))
	if err != nil || seq != uint64(len(chunks)+1) {
		t.Fatalf("append after the races: seq %d, %v; want %d", seq, err, len(chunks)+1)
	}
}
