package workload

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/yamlnode"
	"github.com/agora-sched/agora/market/spec"
)

// MaxSpecFileBytes is the largest job spec file ReadSpecs reads.
const MaxSpecFileBytes = 64 << 20

// Epoch is the wall-clock time a simulation's offset zero stands for. A
// job spec read by ReadSpecs is parsed as if submitted at Epoch + its
// submit offset, so a deadline given as a duration counts from its submit.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// specKeys are the keys ReadSpecs takes from each list entry before the
// rest is parsed as a job spec.
var specKeys = map[string]bool{"submit": true, "user": true, "runtime": true}

// OpenSpecs reads the job spec file at path (see ReadSpecs).
func OpenSpecs(path string) (*Workload, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readSpecs(r, filepath.Base(path))
}

// ReadSpecs reads a YAML (or JSON) list of Agora job specs, each parsed
// by spec.Parse as `agora submit` would, with three more keys:
//
//   - submit: 90s          # offset from the workload's start; default 0
//     user: alice          # default ""
//     runtime: 10m         # true runtime of every task, or per task:
//     # runtime: {prep: 1m, train: 2h}
//     name: train-resnet   # ... the rest is the job spec
//     tasks: [...]
//
// A task without a runtime runs for its estimate; one with neither is an
// error. The job's ID is its name, with "#2", "#3", … added to repeats.
// Errors are *ParseErrors naming the entry, its line and the field.
func ReadSpecs(r io.Reader) (*Workload, error) {
	return readSpecs(r, "specs")
}

func readSpecs(r io.Reader, name string) (*Workload, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecFileBytes+1))
	if err != nil {
		return nil, &ParseError{Source: name, Err: err}
	}
	if len(data) > MaxSpecFileBytes {
		return nil, parseErr(name, 0, "", "more than %d bytes", MaxSpecFileBytes)
	}
	root, err := decodeYAML(data, name)
	if err != nil {
		return nil, err
	}
	if root == nil || root.Kind != yaml.SequenceNode {
		what := "nothing"
		if root != nil {
			what = describe(root)
		}
		return nil, parseErr(name, 0, "", "want a list of job specs, got %s", what)
	}
	w := &Workload{Name: name}
	names := map[string]int{}
	for i, item := range root.Content {
		job, err := specEntry(deref(item), name, i)
		if err != nil {
			return nil, err
		}
		names[job.ID]++
		if n := names[job.ID]; n > 1 {
			job.ID += "#" + strconv.Itoa(n)
		}
		w.Jobs = append(w.Jobs, job)
	}
	w.Sort()
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}

// specEntry reads one entry of the list.
func specEntry(n *yaml.Node, src string, i int) (Job, error) {
	at := fmt.Sprintf("[%d]", i)
	if n.Kind != yaml.MappingNode {
		return Job{}, parseErr(src, n.Line, at, "want a job spec mapping, got %s", describe(n))
	}
	var job Job
	var runtime *yaml.Node
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	seen := map[string]int{} // key → its line
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, v := deref(n.Content[k]), deref(n.Content[k+1])
		if !specKeys[key.Value] {
			rest.Content = append(rest.Content, n.Content[k], n.Content[k+1])
			continue
		}
		field := at + "." + key.Value
		if line, dup := seen[key.Value]; dup {
			return Job{}, parseErr(src, key.Line, field, "duplicate key (first at line %d)", line)
		}
		seen[key.Value] = key.Line
		switch key.Value {
		case "submit":
			d, err := submitValue(v)
			if err != nil {
				return Job{}, parseErr(src, v.Line, field, "%v", err)
			}
			job.Submit = d
		case "user":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				return Job{}, parseErr(src, v.Line, field, "want a string, got %s", describe(v))
			}
			job.User = v.Value
		case "runtime":
			runtime = v
		}
	}
	budget := maxYAMLNodes
	expanded, err := expand(rest, &budget)
	if err != nil {
		return Job{}, parseErr(src, n.Line, at, "%v", err)
	}
	data, err := yaml.Marshal(expanded)
	if err != nil {
		return Job{}, parseErr(src, n.Line, at, "%v", err)
	}
	sj, err := spec.Parse(data, Epoch.Add(job.Submit))
	if err != nil {
		return Job{}, &ParseError{Source: src, Line: n.Line, Field: at, Err: relocate(err, n)}
	}
	job.ID, job.Spec = sj.Name, *sj
	job.Runtimes, err = runtimes(sj, runtime)
	if err != nil {
		line := n.Line
		if runtime != nil {
			line = runtime.Line
		}
		return Job{}, parseErr(src, line, at+".runtime", "%v", err)
	}
	return job, nil
}

// submitValue reads a submit offset: a duration of zero or more.
func submitValue(v *yaml.Node) (time.Duration, error) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" && v.Value == "0" {
		return 0, nil
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return 0, fmt.Errorf("want a duration such as 90s, got %s", describe(v))
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.Value))
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid duration %q (want e.g. 90s or 2h30m)", v.Value)
	case d < 0:
		return 0, fmt.Errorf("%s is negative", d)
	case d > 100*spec.MaxDuration:
		return 0, fmt.Errorf("%s is over the limit of %s", d, 100*spec.MaxDuration)
	}
	return d, nil
}

// runtimes gives every task of j its true runtime: from v, a duration
// for every task or a mapping of task names to durations, or else the
// task's estimate.
func runtimes(j *spec.Job, v *yaml.Node) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(j.Tasks))
	switch {
	case v == nil:
	case v.Kind == yaml.MappingNode:
		for k := 0; k+1 < len(v.Content); k += 2 {
			name, dv := deref(v.Content[k]), deref(v.Content[k+1])
			if _, ok := j.Task(name.Value); !ok {
				return nil, fmt.Errorf("%s: no such task", name.Value)
			}
			if _, dup := out[name.Value]; dup {
				return nil, fmt.Errorf("%s: repeated task", name.Value)
			}
			d, err := positiveDuration(dv)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", name.Value, err)
			}
			out[name.Value] = d
		}
	default:
		d, err := positiveDuration(v)
		if err != nil {
			return nil, err
		}
		for _, t := range j.Tasks {
			out[t.Name] = d
		}
	}
	for _, t := range j.Tasks {
		if out[t.Name] > 0 {
			continue
		}
		if t.Estimate <= 0 {
			return nil, fmt.Errorf("task %s has neither a runtime nor an estimate", t.Name)
		}
		out[t.Name] = t.Estimate
	}
	return out, nil
}

func positiveDuration(v *yaml.Node) (time.Duration, error) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return 0, fmt.Errorf("want a duration such as 10m, got %s", describe(v))
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.Value))
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid duration %q (want e.g. 10m)", v.Value)
	case d <= 0:
		return 0, fmt.Errorf("%s must be more than zero", d)
	case d > 100*spec.MaxDuration:
		return 0, fmt.Errorf("%s is over the limit of %s", d, 100*spec.MaxDuration)
	}
	return d, nil
}

// relocate rewrites the lines of a spec.ValidationError, which count from
// the start of the entry as spec.Parse saw it, to the lines of the file,
// found by following each error's field path from the entry's node.
func relocate(err error, entry *yaml.Node) error {
	var ve *spec.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &spec.ValidationError{Truncated: ve.Truncated}
	for _, fe := range ve.Errors {
		fe.Line = lineAt(entry, fe.Path)
		out.Errors = append(out.Errors, fe)
	}
	return out
}

// lineAt finds the line of the field path ("tasks[1].resources.gpu") in
// n, or of the deepest part of it that exists; n's own for no path.
func lineAt(n *yaml.Node, path string) int {
	if path == "" {
		return n.Line
	}
	return yamlnode.LineOf(n, path)
}
