package spec

import (
	"strings"
	"testing"
	"time"
)

// TestCanonical: a parsed job's canonical form reads back as the same
// job; anything else — other spacing, an unknown field, an invalid job —
// is refused.
func TestCanonical(t *testing.T) {
	js, err := Parse([]byte("name: j\ntasks:\n  - name: a\n    command: [echo, hi]\n    resources: {cpu: 500m, memory: 1GiB}\n    env: {K: v}\n  - name: b\n    command: [\"true\"]\n    after: [a]\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	canon, err := Canonical(js)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromCanonical(canon)
	if err != nil {
		t.Fatalf("canonical form refused: %v", err)
	}
	again, _ := Canonical(back)
	if string(again) != string(canon) {
		t.Fatalf("round trip changed the job:\n%s\n%s", canon, again)
	}
	for name, b := range map[string]string{
		"spaced":        strings.Replace(string(canon), ":", ": ", 1),
		"unknown field": strings.Replace(string(canon), "{", `{"evil":1,`, 1),
		"yaml":          "name: j\ntasks: []\n",
		"trailing":      string(canon) + "{}",
	} {
		if _, err := FromCanonical([]byte(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	bad := *back
	bad.Tasks = nil
	if b, _ := Canonical(&bad); b != nil {
		if _, err := FromCanonical(b); err == nil {
			t.Error("a job without tasks was accepted")
		}
	}
}
