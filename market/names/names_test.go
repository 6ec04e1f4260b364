package names

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The grammars as the regular expressions they replace; every check must
// agree with its expression on every input.
var grammars = []struct {
	name  string
	check func(string) bool
	re    *regexp.Regexp
}{
	{"TaskName", TaskName, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)},
	{"JobID", JobID, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)},
	{"NodeID", NodeID, regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)},
	{"EnvName", EnvName, regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)},
	{"DeviceKind", DeviceKind, regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)},
	{"LabelKey", LabelKey, regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_./-]{0,127}$`)},
}

func TestNamesTable(t *testing.T) {
	for _, tc := range []struct {
		check func(string) bool
		in    string
		want  bool
	}{
		{TaskName, "train", true},
		{TaskName, "t-1.x_y", true},
		{TaskName, "", false},
		{TaskName, strings.Repeat("a", 64), true},
		{TaskName, strings.Repeat("a", 65), false},
		{TaskName, "a b", false},
		{TaskName, "a/b", false},
		{TaskName, "é", false},
		{NodeID, "12D3KooWabc", true},
		{NodeID, "12D3 KooW", false},
		{EnvName, "_X1", true},
		{EnvName, "1X", false},
		{EnvName, "A-B", false},
		{EnvName, "", false},
		{DeviceKind, "fpga", true},
		{DeviceKind, "-fpga", false},
		{DeviceKind, "fpga.v2", true},
		{LabelKey, "zone/a", true},
		{LabelKey, "/zone", false},
		{LabelKey, strings.Repeat("k", 129), false},
	} {
		if got := tc.check(tc.in); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestNamesAgreeWithRegexps: random strings over an alphabet that hits
// every class boundary, of lengths around every bound.
func TestNamesAgreeWithRegexps(t *testing.T) {
	alphabet := "aZ09_.-/ é\x00@[`{:"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := rng.IntN(140)
		if rng.IntN(4) == 0 {
			n = []int{0, 1, 2, 63, 64, 65, 127, 128, 129}[rng.IntN(9)]
		}
		var b strings.Builder
		for range n {
			if rng.IntN(3) > 0 {
				b.WriteByte("abcXYZ0189"[rng.IntN(10)])
			} else {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
		}
		s := b.String()
		for _, g := range grammars {
			if got, want := g.check(s), g.re.MatchString(s); got != want {
				t.Fatalf("%s(%q) = %v, the expression says %v", g.name, s, got, want)
			}
		}
	}
}

func BenchmarkNodeIDCheck(b *testing.B) {
	id := "12D3KooWQe3sE7JvJ9bJ5m6oU1bGzS4p2rHcK7Lx8nYtVwXyZaBc"
	re := grammars[2].re
	b.Run("loop", func(b *testing.B) {
		for b.Loop() {
			NodeID(id)
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			re.MatchString(id)
		}
	})
}
