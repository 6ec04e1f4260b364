package workload

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadSpecs(t *testing.T) {
	const file = `
- name: train
  submit: 90s
  user: alice
  runtime: {prep: 1m, fit: 2h}
  deadline: 1h
  tasks:
    - {name: prep, command: make data, estimate: 5m}
    - name: fit
      command: [python, fit.py]
      after: [prep]
      resources: {gpu: {count: 2}}
      replicas: 2
      gang: true
- name: train
  tasks: [{name: main, command: "true", estimate: 30s}]
- name: sweep
  submit: 0
  runtime: 10m
  tasks: [{name: a, command: x}, {name: b, command: y}]
`
	w, err := ReadSpecs(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(w.Jobs))
	}
	// In submit order: the two at 0 by ID, then the one at 90s.
	sweep, second, train := w.Jobs[0], w.Jobs[1], w.Jobs[2]
	if second.ID != "train#2" || second.Runtimes["main"] != 30*time.Second || second.Submit != 0 {
		t.Errorf("second train %+v", second)
	}
	if sweep.ID != "sweep" || sweep.Runtimes["a"] != 10*time.Minute || sweep.Runtimes["b"] != 10*time.Minute {
		t.Errorf("sweep %+v", sweep)
	}
	if train.ID != "train" || train.User != "alice" || train.Submit != 90*time.Second ||
		train.Runtimes["prep"] != time.Minute || train.Runtimes["fit"] != 2*time.Hour {
		t.Errorf("train %+v", train)
	}
	fit, _ := train.Spec.Task("fit")
	if fit.Request.GPU.Count != 2 || fit.Replicas != 2 || !fit.Gang || fit.After[0] != "prep" {
		t.Errorf("fit task %+v", fit)
	}
	if want := Epoch.Add(90*time.Second + time.Hour); !train.Spec.Deadline.Equal(want) {
		t.Errorf("deadline %v, want %v (an hour after submit)", train.Spec.Deadline, want)
	}
}

func TestReadSpecsErrors(t *testing.T) {
	cases := []struct {
		name, input string
		line        int
		field, msg  string
	}{
		{"not a list", "name: x", 0, "", "want a list of job specs, got a mapping"},
		{"entry not a mapping", "- 3", 1, "[0]", "want a job spec mapping"},
		{"bad submit", "- name: x\n  submit: soon\n  tasks: [{name: a, command: x, estimate: 1m}]", 2, "[0].submit", "invalid duration"},
		{"negative submit", "- name: x\n  submit: -1s\n  tasks: [{name: a, command: x, estimate: 1m}]", 2, "[0].submit", "negative"},
		{"repeated submit", "- name: x\n  submit: 1s\n  submit: 2s\n  tasks: [{name: a, command: x, estimate: 1m}]", 3, "[0].submit", "duplicate key (first at line 2)"},
		{"spec error with its file line", "- name: ok\n  tasks: [{name: a, command: x, estimate: 1m}]\n- name: bad\n  tasks:\n    - name: a\n      resources: {cpu: -1}\n      command: x\n      estimate: 1m",
			3, "[1]", "tasks[0].resources.cpu"},
		{"no runtime", "- name: x\n  tasks: [{name: a, command: x}]", 1, "[0].runtime", "neither a runtime nor an estimate"},
		{"runtime of unknown task", "- name: x\n  runtime: {b: 1m}\n  tasks: [{name: a, command: x}]", 2, "[0].runtime", "b: no such task"},
		{"zero runtime", "- name: x\n  runtime: 0s\n  tasks: [{name: a, command: x}]", 2, "[0].runtime", "more than zero"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadSpecs(strings.NewReader(c.input))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			t.Log(err)
			if pe.Line != c.line || pe.Field != c.field || !strings.Contains(pe.Err.Error(), c.msg) {
				t.Errorf("error %q (line %d, field %q), want line %d, field %q and %q", err, pe.Line, pe.Field, c.line, c.field, c.msg)
			}
		})
	}
}
