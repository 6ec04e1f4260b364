package yamlnode

import (
	"errors"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		root       string // Describe of the root; "" for none
		err        string
	}{
		{"empty", "", "", ""},
		{"comment only", "# nothing\n", "", ""},
		{"null", "~\n", "", ""},
		{"document marker", "---\n", "", ""},
		{"mapping", "a: 1\n", "a mapping", ""},
		{"aliased root", "--- *x\n", "", "invalid YAML"},
		{"syntax error", "a: [1\n", "", "invalid YAML: line 1: did not find expected ',' or ']'"},
		{"two documents", "a: 1\n---\nb: 2\n", "", "more than one YAML document (line 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := Decode([]byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if root != nil {
				got = Describe(root)
			}
			if got != tc.root {
				t.Fatalf("root %q, want %q", got, tc.root)
			}
		})
	}
	var extra *ExtraDocumentError
	if _, err := Decode([]byte("a\n---\nb\n")); !errors.As(err, &extra) || extra.Line != 2 {
		t.Fatalf("second document: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	root, err := Decode([]byte(`{m: {}, l: [], n: ~, s: x, b: true, i: 5, f: 2.5, t: 2026-01-01, long: "` + strings.Repeat("é", 40) + `", a: &v 7, r: *v}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"m": "a mapping", "l": "a list", "n": "null", "s": `the string "x"`, "b": "the boolean true",
		"i": "the number 5", "f": "the number 2.5", "t": `the timestamp "2026-01-01"`,
		"long": `the string "` + strings.Repeat("é", 24) + `"…`, "a": "the number 7", "r": "the number 7",
	}
	for _, f := range Fields(root) {
		if got := Describe(f.V); got != want[f.Key] {
			t.Errorf("%s: %s, want %s", f.Key, got, want[f.Key])
		}
	}
	if !IsNull(&yaml.Node{Kind: yaml.AliasNode}) {
		t.Error("a dangling alias is not null")
	}
}

func TestFields(t *testing.T) {
	root, err := Decode([]byte("a: 1\nb: 2\na: 3\n[x]: 4\n<<: {c: 5}\n~: 6\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Fields(root) {
		got = append(got, f.Key+"="+f.Problem)
	}
	want := []string{
		"a=", "b=", "a=duplicate key (first at line 1)", "=keys must be strings, got a list",
		"<<=merge keys (<<) are not supported; use an alias (*name) for the whole value", "~=keys must be strings, got null",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("fields\n got  %q\n want %q", got, want)
	}
	if Fields(&yaml.Node{Kind: yaml.SequenceNode}) != nil {
		t.Fatal("a list has fields")
	}
}

func TestLineOf(t *testing.T) {
	root, err := Decode([]byte("name: j\ntasks:\n  - name: a\n  - name: b\n    env:\n      \"A B\": x\n"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"":                    0,
		"name":                1,
		"tasks":               2,
		"tasks[1]":            4,
		"tasks[1].name":       4,
		`tasks[1].env["A B"]`: 6,
		"tasks[1].resources":  4, // left out: the last node reached
		"tasks[7].name":       3, // no such element: the list's line
		"tasks[x]":            3,
	} {
		if got := LineOf(root, path); got != want {
			t.Errorf("LineOf(%q) = %d, want %d", path, got, want)
		}
	}
}
