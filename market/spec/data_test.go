package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const dataSpec = `
name: pipeline
tasks:
  - name: prep
    command: "head -c 10485760 /dev/urandom > out.bin"
    outputs: [out.bin]
  - name: shards
    command: "mkdir -p res; echo $AGORA_REPLICA > res/r; echo log > log.txt"
    replicas: 2
    outputs: [res, {path: log.txt, max: 1MiB}]
  - name: train
    after: [prep, shards]
    inputs:
      - {from: prep, path: out.bin}
      - {local: ./params.json, path: params.json}
      - {from: shards, output: res/r, replica: 1, path: r1}
      - {from: shards, path: all}
      - {local: /home/u/data/}
    command: "sha256sum out.bin params.json"
`

func TestParseData(t *testing.T) {
	j := mustParse(t, dataSpec)
	prep, _ := j.Task("prep")
	if !reflect.DeepEqual(prep.Outputs, []Output{{Path: "out.bin"}}) {
		t.Errorf("prep outputs %+v", prep.Outputs)
	}
	shards, _ := j.Task("shards")
	if !reflect.DeepEqual(shards.Outputs, []Output{{Path: "res"}, {Path: "log.txt", Max: 1 << 20}}) {
		t.Errorf("shards outputs %+v", shards.Outputs)
	}
	train, _ := j.Task("train")
	want := []Input{
		{From: "prep", Output: "out.bin", Path: "out.bin"},
		{Local: "./params.json", Path: "params.json"},
		{From: "shards", Output: "res/r", Replica: 1, Path: "r1"},
		{From: "shards", Replica: AllReplicas, Path: "all"},
		{Local: "/home/u/data/", Path: "data"},
	}
	if !reflect.DeepEqual(train.Inputs, want) {
		t.Errorf("train inputs\n got %+v\nwant %+v", train.Inputs, want)
	}
	if got := j.LocalInputs(); len(got) != 2 || got[0] != "train: ./params.json" {
		t.Errorf("LocalInputs %q", got)
	}
	b, err := Canonical(j)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromCanonical(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, j) {
		t.Errorf("canonical round trip:\n got %+v\nwant %+v", back, j)
	}
}

func TestDataErrors(t *testing.T) {
	base := func(prepOut, trainIn string) string {
		return "name: p\ntasks:\n  - name: prep\n    command: x\n    outputs: " + prepOut +
			"\n  - name: train\n    after: [prep]\n    command: y\n    inputs: " + trainIn + "\n"
	}
	cases := []struct {
		name, spec, path, msg string
	}{
		{"dot-dot output", base("[../x]", "[]"), "tasks[0].outputs[0].path", "leaves the work directory"},
		{"absolute output", base("[/etc/passwd]", "[]"), "tasks[0].outputs[0].path", "is absolute"},
		{"unclean output", base("[a//b]", "[]"), "tasks[0].outputs[0].path", "not a clean path"},
		{"output over its limit", base("[{path: a, max: 100GiB}]", "[]"), "tasks[0].outputs[0].max", "over the limit"},
		{"overlapping outputs", base("[a, a/b]", "[]"), "tasks[0].outputs[1].path", "overlaps outputs[0]"},
		{"dot-dot input path", base("[a]", "[{from: prep, path: ../a}]"), "tasks[1].inputs[0].path", "leaves the work directory"},
		{"absolute input path", base("[a]", "[{local: x, path: /tmp/x}]"), "tasks[1].inputs[0].path", "is absolute"},
		{"unknown from", base("[a]", "[{from: nope}]"), "tasks[1].inputs[0].from", `unknown task "nope"`},
		{"own outputs", base("[a]", "[{from: train}]"), "tasks[1].inputs[0].from", "its own outputs"},
		{"no outputs", base("[]", "[{from: prep}]"), "tasks[1].inputs[0].from", "declares no outputs"},
		{"output not declared", base("[a]", "[{from: prep, output: b}]"), "tasks[1].inputs[0].output", "not among the outputs of prep"},
		{"two sources", base("[a]", "[{from: prep, local: x}]"), "tasks[1].inputs[0]", "exactly one of from, data and local"},
		{"no source", base("[a]", "[{path: x}]"), "tasks[1].inputs[0]", "exactly one of from, data and local"},
		{"bad data id", base("[a]", "[{data: abc, path: x}]"), "tasks[1].inputs[0].data", "not a manifest ID"},
		{"data without path", base("[a]", "[{data: "+strings.Repeat("a", 64)+"}]"), "tasks[1].inputs[0].path", "required"},
		{"replica out of range", base("[a]", "[{from: prep, replica: 3}]"), "tasks[1].inputs[0].replica", "out of range 0..0"},
		{"same place twice", base("[a]", "[{from: prep}, {local: ./a}]"), "tasks[1].inputs[1].path", "where inputs[0] places"},
		{"unknown field", base("[a]", "[{from: prep, to: x}]"), "tasks[1].inputs[0]", "unknown field"},
		{"not an ancestor", "name: p\ntasks:\n  - {name: prep, command: x, outputs: [a]}\n  - {name: train, command: y, inputs: [{from: prep}]}\n",
			"tasks[1].inputs[0].from", "not an ancestor of train: add it to after"},
		{"cycle through inputs", "name: p\ntasks:\n  - {name: a, command: x, outputs: [o], inputs: [{from: b}]}\n  - {name: b, command: y, after: [a], outputs: [o]}\n",
			"tasks[0].inputs[0].from", "a cycle through inputs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.spec), testNow)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse: %v", err)
			}
			for _, fe := range ve.Errors {
				if strings.HasPrefix(fe.Path, c.path) && strings.Contains(fe.Msg, c.msg) {
					if fe.Line == 0 {
						t.Errorf("%s: no line", fe.Path)
					}
					return
				}
			}
			t.Fatalf("no error at %s saying %q in:\n%v", c.path, c.msg, err)
		})
	}
}
