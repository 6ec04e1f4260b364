package main

import (
	"os"
	"strings"
	"testing"
)

// TestPerformanceCarriesNotes: docs/performance.md is the report's
// output, and its hand-written part is docs/perf/notes.md, which the
// report copies to its end. An edit made to the generated file alone
// would be lost at the next `make bench`, and one made to the notes
// alone would not be read until then; both must hold the same text.
func TestPerformanceCarriesNotes(t *testing.T) {
	perf, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile("../../docs/perf/notes.md")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(notes), "\n")
	i := strings.Index(string(perf), first+"\n")
	if i < 0 {
		t.Fatalf("docs/performance.md has no %q: the notes are not carried", first)
	}
	if got := string(perf[i:]); got != string(notes) {
		a, b := strings.Split(got, "\n"), strings.Split(string(notes), "\n")
		for n := 0; n < min(len(a), len(b)); n++ {
			if a[n] != b[n] {
				t.Fatalf("docs/performance.md and docs/perf/notes.md differ at the notes' line %d:\nperformance.md: %s\nnotes.md:       %s", n+1, a[n], b[n])
			}
		}
		t.Fatalf("docs/performance.md carries %d lines of notes, docs/perf/notes.md has %d", len(a), len(b))
	}
}
