package spec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		fullSpec,
		`{"name":"j","tasks":[{"name":"a","command":"echo hi","resources":{"gpu":0.5}}]}`,
		"name: j\ntasks: [{name: a, command: [x], after: [b]}, {name: b, command: [x], after: [a]}]\n",
		"name: j\ntasks:\n  - &t {name: a, command: [x], resources: &r {cpu: 500m, memory: 1GiB}}\n  - {name: b, command: [y], resources: *r, after: [a]}\n",
		"name: j\ndeadline: 2030-01-01T00:00:00Z\ntasks: [{name: a, command: [x], env: {A: b}, checkpoint: {interval: 5s}, replicas: 2, gang: true, pack: true}]\n",
		"name: j\ntasks:\n  - name: a\n    comand: [x]\n    <<: {x: 1}\n",
		"",
		"~",
		"[",
		"a: &a [*a]",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := Parse(data, testNow)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError: %v", err, err)
			}
			if j != nil {
				t.Fatalf("Parse returned both a job and an error")
			}
			if len(ve.Errors) == 0 || len(ve.Errors) > MaxErrors {
				t.Fatalf("%d errors", len(ve.Errors))
			}
			for _, fe := range ve.Errors {
				if strings.Contains(fe.String(), "\n") {
					t.Fatalf("error spans lines: %q", fe.String())
				}
			}
			return
		}
		// A parsed job is valid, orderable, and survives the wire.
		if err := j.Validate(); err != nil {
			t.Fatalf("Parse accepted a job Validate rejects: %v", err)
		}
		order, err := j.TopoOrder()
		if err != nil || len(order) != len(j.Tasks) {
			t.Fatalf("TopoOrder: %v, %d of %d tasks", err, len(order), len(j.Tasks))
		}
		if len(j.Ready(nil)) == 0 {
			t.Fatalf("a valid job has no ready task")
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		var back Job
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("job invalid after a JSON round trip: %v", err)
		}
	})
}
