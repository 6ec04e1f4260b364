package executor

import (
	"slices"
	"testing"

	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/store"
)

// TestJoinChunks: tagged chunks join into the output with the spans that
// came from standard error (adjacent ones merged); untagged chunks, kept
// before the streams were told apart, pass as they are.
func TestJoinChunks(t *testing.T) {
	ch := func(seq uint64, s string) store.LogChunk { return store.LogChunk{Seq: seq, Data: []byte(s)} }
	tests := []struct {
		name     string
		chunks   []store.LogChunk
		tagged   bool
		data     string
		stderr   []api.Span
		nextWant uint64
	}{
		{"untagged", []store.LogChunk{ch(1, "out\n"), ch(2, "err\n")}, false, "out\nerr\n", nil, 9},
		{"tagged", []store.LogChunk{ch(1, "oout\n"), ch(2, "eerr\n"), ch(3, "oend\n")}, true, "out\nerr\nend\n", []api.Span{{Off: 4, Len: 4}}, 9},
		{"adjacent stderr merged", []store.LogChunk{ch(1, "ea"), ch(2, "eb"), ch(3, "oc"), ch(4, "ed")}, true, "abcd", []api.Span{{Off: 0, Len: 2}, {Off: 3, Len: 1}}, 9},
		{"empty chunk", []store.LogChunk{ch(1, ""), ch(2, "e"), ch(3, "ox")}, true, "x", nil, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, spans, next := joinChunks(tc.chunks, 9, tc.tagged)
			if string(data) != tc.data || !slices.Equal(spans, tc.stderr) || next != tc.nextWant {
				t.Fatalf("got %q %v next %d, want %q %v next %d", data, spans, next, tc.data, tc.stderr, tc.nextWant)
			}
		})
	}
}

// TestJoinChunksSpanBound: a page that would hold more than
// api.MaxStderrSpans spans ends before the chunk that would open one
// more, and its next cursor names that chunk.
func TestJoinChunksSpanBound(t *testing.T) {
	var chunks []store.LogChunk
	for i := 0; i < 2*api.MaxStderrSpans+10; i++ {
		tag := "o"
		if i%2 == 0 {
			tag = "e"
		}
		chunks = append(chunks, store.LogChunk{Seq: uint64(i + 1), Data: []byte(tag + "x")})
	}
	data, spans, next := joinChunks(chunks, 99999, true)
	if len(spans) != api.MaxStderrSpans {
		t.Fatalf("%d spans, want %d", len(spans), api.MaxStderrSpans)
	}
	if next != uint64(2*api.MaxStderrSpans+1) || len(data) != 2*api.MaxStderrSpans {
		t.Fatalf("page ends at chunk %d with %d bytes, want chunk %d and %d bytes", next, len(data), 2*api.MaxStderrSpans+1, 2*api.MaxStderrSpans)
	}
}
