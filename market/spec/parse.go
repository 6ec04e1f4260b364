package spec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/yamlnode"
)

var jobFields = []string{"name", "type", "priority", "deadline", "pending_timeout", "tasks"}

// Parse reads a job spec, in YAML or JSON, and returns the normalized Job
// with defaults applied. now is the submit time: a duration deadline counts
// from it and an absolute deadline must lie after it.
//
// Every problem found is returned, up to MaxErrors, as a *ValidationError
// whose entries name the field path and spec line; Parse returns no other
// kind of error and never panics. A Job returned by Parse passes Validate.
func Parse(data []byte, now time.Time) (*Job, error) {
	if len(data) > MaxSpecBytes {
		return nil, single("spec is %d bytes, over the limit of %d", len(data), MaxSpecBytes)
	}
	root, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	errs := &errorList{root: root}
	d := &decoder{errs: errs}
	job := d.job(root, now)
	if errs.full() {
		return nil, errs.err()
	}
	job.dataDefaults()
	job.check(errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return job, nil
}

// single is a *ValidationError holding one problem with the whole spec.
func single(format string, args ...any) error {
	return &ValidationError{Errors: []FieldError{{Msg: fmt.Sprintf(format, args...)}}}
}

// decodeDocument parses data into the node tree of its one document.
func decodeDocument(data []byte) (*yaml.Node, error) {
	root, err := yamlnode.Decode(data)
	var syn *yamlnode.SyntaxError
	switch {
	case errors.As(err, &syn):
		return nil, single("invalid YAML or JSON: %s", syn.Msg)
	case err != nil:
		return nil, single("spec must hold exactly one YAML document")
	case root == nil:
		return nil, single("spec is empty")
	}
	return root, nil
}

// job decodes the top-level mapping.
func (d *decoder) job(n *yaml.Node, now time.Time) *Job {
	j := &Job{Priority: DefaultPriority}
	typeSet := false
	d.mapping(n, "", jobFields, func(key string, v *yaml.Node, p string) {
		switch key {
		case "name":
			j.Name, _ = d.str(v, p)
		case "type":
			j.Type, _ = d.str(v, p)
			typeSet = true
		case "priority":
			if pr, ok := d.integer(v, p); ok {
				j.Priority = pr
			}
		case "deadline":
			j.Deadline = d.deadline(v, p, now)
		case "pending_timeout":
			j.PendingTimeout, _ = d.duration(v, p)
		case "tasks":
			j.Tasks = d.tasks(v, p)
		}
	})
	if !typeSet {
		j.Type = j.Name
		if j.Name == "" {
			// The type defaults to the name, whose problem is reported
			// already; do not report it twice.
			d.errs.failed = append(d.errs.failed, "type")
		}
	}
	return j
}

// deadline decodes a duration from now or an RFC 3339 time after now.
func (d *decoder) deadline(n *yaml.Node, path string, now time.Time) time.Time {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
		d.errs.fail(path, n.Line, "must be a duration such as 30m or an RFC 3339 time, got %s", describe(n))
		return time.Time{}
	}
	s := strings.TrimSpace(n.Value)
	now = now.Round(0)
	if dur, err := time.ParseDuration(s); err == nil {
		switch {
		case dur <= 0:
			d.errs.fail(path, n.Line, "%s must be greater than zero", quote(s))
		case dur > MaxDuration:
			d.errs.fail(path, n.Line, "%s is more than %s away", quote(s), MaxDuration)
		default:
			return now.Add(dur).UTC()
		}
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	switch {
	case err != nil:
		d.errs.fail(path, n.Line, "%s is neither a duration nor an RFC 3339 time", quote(n.Value))
	case !t.After(now):
		d.errs.fail(path, n.Line, "%s is not in the future (now is %s)", s, now.UTC().Format(time.RFC3339))
	case t.Sub(now) > MaxDuration:
		d.errs.fail(path, n.Line, "%s is more than %s away", s, MaxDuration)
	default:
		return t.UTC()
	}
	return time.Time{}
}

// tasks decodes the task list. Every element yields a Task, even a broken
// one, so that model paths keep the spec's indices.
func (d *decoder) tasks(n *yaml.Node, path string) []Task {
	elems, ok := d.sequence(n, path, MaxTasks, "tasks")
	if !ok {
		return nil
	}
	tasks := make([]Task, len(elems))
	for i, e := range elems {
		if d.errs.full() {
			break
		}
		tasks[i] = d.task(e, index(path, i))
	}
	return tasks
}
