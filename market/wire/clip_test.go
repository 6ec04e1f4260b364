package wire

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agora-sched/agora/market"
)

func TestClipText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"ααααα", 8, "ααα…"[:4] + "…"},
		{"a\xffb", 10, "a\uFFFDb"},
		{"abc", 2, ""},
	}
	for _, tc := range tests {
		got := ClipText(tc.in, tc.max)
		if got != tc.want || len(got) > tc.max || !utf8.ValidString(got) {
			t.Errorf("ClipText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	// A clipped runtime reason makes an over-long status encodable.
	long := "start: exec: \"" + strings.Repeat("é", 5000) + "\xff\": not found"
	st := market.TaskStatus{Key: key, Node: bidder, State: market.TaskFailed, ExitCode: -1, Reason: long}
	if _, err := Encode(st); err == nil {
		t.Fatal("Encode accepted an over-long reason")
	}
	st.Reason = ClipText(long, MaxReasonLen)
	b, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := Decode(b); err != nil || m.(market.TaskStatus).Reason != st.Reason {
		t.Fatalf("clipped reason round trip: %v", err)
	}
}
