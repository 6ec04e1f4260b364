package spec

import (
	"os"
	"strings"
	"testing"
)

// TestJobspecDocCoversFields: docs/jobspec.md describes every field the
// parser knows, each in backticks as its path (issue 41).
func TestJobspecDocCoversFields(t *testing.T) {
	b, err := os.ReadFile("../../docs/jobspec.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	paths := FieldPaths()
	if len(paths) < 40 {
		t.Fatalf("only %d field paths: %v", len(paths), paths)
	}
	for _, p := range paths {
		if !strings.Contains(doc, "| `"+p+"` |") {
			t.Errorf("docs/jobspec.md has no row for the spec field %s", p)
		}
	}
}
