package node

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRefusalReasonsDocumented: the reasons agora_refused_total starts
// with are the table of docs/security.md, "Refusal reasons on /metrics".
func TestRefusalReasonsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "## Refusal reasons on /metrics")
	end := strings.Index(s[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("docs/security.md has no section Refusal reasons on /metrics")
	}
	var doc []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(s[start:start+1+end], -1) {
		doc = append(doc, m[1])
	}
	got := slices.Clone(refusalReasons)
	slices.Sort(got)
	slices.Sort(doc)
	if !slices.Equal(got, doc) {
		t.Fatalf("refusal reasons %v\ndocs/security.md lists %v", got, doc)
	}
}
