package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// slowRead is decodeSigned's encoding/json path, what quickRead must
// agree with.
func slowRead(b []byte) (*Job, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j Job
	if err := dec.Decode(&j); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the object")
	}
	return &j, nil
}

// TestQuickRead: the canonical form of real specs takes the quick path
// and reads as encoding/json reads it; what the quick path does not
// handle falls back, and still reads.
func TestQuickRead(t *testing.T) {
	full, err := Canonical(fullJob())
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse([]byte(fullSpec), testNow)
	if err != nil {
		t.Fatal(err)
	}
	withDeadline, err := Canonical(parsed)
	if err != nil {
		t.Fatal(err)
	}
	tasks := make([]string, 25)
	for i := range tasks {
		tasks[i] = fmt.Sprintf(`{"name":"t%03d","command":["true"],"request":{"cpu_milli":100,"memory":0,"gpu":{}},"retries":3,"replicas":1}`, i)
	}
	many := `{"name":"bench","type":"bench","priority":5,"tasks":[` + strings.Join(tasks, ",") + `]}`
	quick := []string{
		string(full),
		string(withDeadline),
		many,
		`{"name":"j","tasks":[]}`,
		`{"name":"j","priority":-3,"tasks":[{"name":"a","command":[],"env":{},"request":{"cpu_milli":0,"memory":0,"gpu":{},"labels":{}},"after":[]}]}`,
		`{}`,
	}
	for _, in := range quick {
		j, ok := quickRead([]byte(in))
		if !ok {
			t.Errorf("quick path refused a canonical spec: %.80s", in)
			continue
		}
		want, err := slowRead([]byte(in))
		if err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if !reflect.DeepEqual(j, want) {
			t.Errorf("quick path read %+v, encoding/json %+v", j, want)
		}
	}
	if j, _ := quickRead(full); !reflect.DeepEqual(j, fullJob()) {
		t.Errorf("quick path read %+v, want %+v", j, fullJob())
	}
	slow := []string{
		`{"name": "j"}`,                           // whitespace
		`{"Name":"j"}`,                            // encoding/json folds case
		`{"name":"j","name":"k"}`,                 // a key twice
		`{"name":"j\u0041"}`,                      // an escape
		`{"name":"é"}`,                            // beyond ASCII
		`{"priority":1.0}`,                        // a fraction
		`{"priority":1e2}`,                        // an exponent
		`{"priority":01}`,                         // a leading zero
		`{"priority":99999999999999999999}`,       // out of range
		`{"name":null}`,                           // null
		`{"name":"j"} `,                           // data after it
		`{"name":"j","extra":1}`,                  // an unknown field
		`{"tasks":[{"env":{"A":"1","A":"2"}}]}`,   // a map key twice
		`{"tasks":[{"gang":tru}]}`,                // a broken literal
		`[]`,                                      // not an object
		`{"tasks":[{"request":{"gpu":{"x":1}}}]}`, // an unknown nested field
	}
	for _, in := range slow {
		if _, ok := quickRead([]byte(in)); ok {
			t.Errorf("quick path took %s", in)
		}
	}
}

// FuzzQuickRead: whatever the quick path accepts, encoding/json reads to
// the same job.
func FuzzQuickRead(f *testing.F) {
	full, _ := Canonical(fullJob())
	for _, s := range []string{string(full), `{"name":"j","tasks":[{"name":"a","command":["x"],"request":{"cpu_milli":1,"memory":2,"gpu":{"count":1}},"retries":3,"replicas":1}]}`, `{"priority":-0}`, `{"tasks":[{"gang":true,"pack":false}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, ok := quickRead(data)
		if !ok {
			return
		}
		want, err := slowRead(data)
		if err != nil {
			t.Fatalf("quick path took what encoding/json refuses (%v): %q", err, data)
		}
		if !reflect.DeepEqual(j, want) {
			t.Fatalf("quick path read %+v, encoding/json %+v, from %q", j, want, data)
		}
	})
}
