package spec

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseArray(t *testing.T) {
	for _, c := range []struct {
		in       string
		first    []int
		n, limit int
		err      string
	}{
		{in: "0-999%50", first: []int{0, 1, 2}, n: 1000, limit: 50},
		{in: "1,3,10-20:5", first: []int{1, 3, 10, 15, 20}, n: 5},
		{in: "7", first: []int{7}, n: 1},
		{in: "0-1000", err: "more than 1000 indices"},
		{in: "5-3", err: "runs backwards"},
		{in: "1,1", err: "must increase"},
		{in: "3,1-2", err: "must increase"},
		{in: "0-9%0", err: "throttle"},
		{in: "0-9%x", err: "throttle"},
		{in: "a-b", err: "want N, N-M"},
		{in: "-1", err: "want N, N-M"},
		{in: "4:2", err: "a step needs a range"},
		{in: "0-9:0", err: "bad step"},
		{in: "%5", err: "no indices"},
	} {
		a, err := ParseArray(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(a.Indices) != c.n || a.Throttle != c.limit || !slices.Equal(a.Indices[:min(len(a.Indices), len(c.first))], c.first) {
			t.Errorf("%q: %v %d indices %v… throttle %d", c.in, err, len(a.Indices), a.Indices[:min(5, len(a.Indices))], a.Throttle)
		}
		if k := (&Task{Array: c.in}).ArrayThrottle(); k != a.Throttle {
			t.Errorf("%q: ArrayThrottle %d, the parsed throttle %d", c.in, k, a.Throttle)
		}
	}
}

// TestArraySpec: array sets the replicas, and is refused beside replicas
// or gang, or when it does not parse, naming the field.
func TestArraySpec(t *testing.T) {
	j, err := Parse([]byte("name: a\ntasks:\n  - name: t\n    command: [\"true\"]\n    array: \"0-9%2\"\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if tk := j.Tasks[0]; tk.Replicas != 10 || tk.Array != "0-9%2" {
		t.Fatalf("%+v", tk)
	}
	canon, _ := Canonical(j)
	if back, err := FromCanonical(canon); err != nil || back.Tasks[0].Array != "0-9%2" {
		t.Fatalf("canonical round trip: %v", err)
	}
	for body, want := range map[string]string{
		"    array: \"0-9\"\n    replicas: 3\n": "give array or replicas, not both",
		"    array: \"0-3\"\n    gang: true\n":  "not with gang",
		"    array: \"9-0\"\n":                  "tasks[0].array",
	} {
		_, err := Parse([]byte("name: a\ntasks:\n  - name: t\n    command: [\"true\"]\n"+body), time.Now())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
