package spec

import (
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/resource"
)

var taskFields = []string{
	"name", "command", "env", "resources", "after", "estimate",
	"checkpoint", "retries", "timeout", "replicas", "array", "array_values", "gang", "pack",
	"outputs", "inputs", "image", "image_id", "image_size",
}

var checkpointFields = []string{"interval"}

// task decodes one element of the task list, defaults applied.
func (d *decoder) task(n *yaml.Node, path string) Task {
	t := Task{
		Retries:  DefaultRetries,
		Replicas: DefaultReplicas,
		Request:  resource.Request{CPU: DefaultCPUMilli},
	}
	replicasSet, arraySet := false, false
	d.mapping(n, path, taskFields, func(key string, v *yaml.Node, p string) {
		switch key {
		case "name":
			t.Name, _ = d.str(v, p)
		case "command":
			t.Command = d.command(v, p)
		case "env":
			t.Env = d.env(v, p)
		case "resources":
			d.resources(v, p, &t.Request)
		case "after":
			t.After = d.after(v, p)
		case "estimate":
			t.Estimate, _ = d.duration(v, p)
		case "checkpoint":
			t.CheckpointInterval = d.checkpoint(v, p)
		case "retries":
			if r, ok := d.integer(v, p); ok {
				t.Retries = r
			}
		case "timeout":
			t.Timeout, _ = d.duration(v, p)
		case "replicas":
			if r, ok := d.integer(v, p); ok {
				t.Replicas = r
			}
			replicasSet = true
			if arraySet {
				d.errs.fail(p, v.Line, "give array or replicas, not both (an array runs one replica per index)")
			}
		case "array":
			t.Array, _ = d.str(v, p)
			if a, err := ParseArray(t.Array); err == nil {
				if replicasSet {
					d.errs.fail(p, v.Line, "give array or replicas, not both (an array runs one replica per index)")
				}
				t.Replicas = len(a.Indices)
				arraySet = true
			}
		case "array_values":
			t.ArrayValues = d.strings(v, p, MaxReplicas, "values")
		case "gang":
			t.Gang, _ = d.boolean(v, p)
		case "pack":
			t.Pack, _ = d.boolean(v, p)
		case "outputs":
			t.Outputs = d.outputs(v, p)
		case "inputs":
			t.Inputs = d.inputs(v, p)
		case "image":
			t.Image, _ = d.str(v, p)
		case "image_id":
			t.ImageID, _ = d.str(v, p)
		case "image_size":
			t.ImageSize, _ = d.size(v, p)
		}
	})
	if t.Image != "" {
		t.RequireContainer()
	}
	return t
}

// RequireContainer adds the label an image task needs of its node.
func (t *Task) RequireContainer() {
	if t.Request.Labels == nil {
		t.Request.Labels = map[string]string{}
	}
	t.Request.Labels[ContainerLabel] = "yes"
}

// command decodes an argv list, or a shell string run with sh -c.
func (d *decoder) command(n *yaml.Node, path string) []string {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if n.Value == "" {
			d.errs.fail(path, n.Line, "empty command")
			return nil
		}
		if !d.spend(len(n.Value), path, n.Line) {
			return nil
		}
		return []string{"sh", "-c", n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		d.errs.fail(path, n.Line, "must be a list of arguments or a shell command string, got %s", describe(n))
		return nil
	}
	return d.strings(n, path, MaxCommandArgs, "arguments")
}

// strings decodes a list of at most max strings (what names them in
// the message when there are more).
func (d *decoder) strings(n *yaml.Node, path string, max int, what string) []string {
	elems, ok := d.sequence(n, path, max, what)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		if d.errs.full() {
			return nil
		}
		if s, ok := d.elem(e, path, i); ok {
			out = append(out, s)
		}
	}
	return out
}

// env decodes the environment map; names are checked with the model.
func (d *decoder) env(n *yaml.Node, path string) map[string]string {
	if c := count(n); c > MaxEnvEntries {
		d.errs.fail(path, resolve(n).Line, "%d variables, over the limit of %d", c, MaxEnvEntries)
		return nil
	}
	env := make(map[string]string)
	d.mapping(n, path, nil, func(key string, v *yaml.Node, p string) {
		if s, ok := d.str(v, p); ok {
			env[key] = s
		}
	})
	if len(env) == 0 {
		return nil
	}
	return env
}

// after decodes the list of task names this task waits for.
func (d *decoder) after(n *yaml.Node, path string) []string {
	names := d.strings(n, path, MaxTasks, "dependencies")
	if len(names) == 0 {
		return nil
	}
	return names
}

// checkpoint decodes {interval: duration}.
func (d *decoder) checkpoint(n *yaml.Node, path string) (interval time.Duration) {
	seen := false
	d.mapping(n, path, checkpointFields, func(_ string, v *yaml.Node, p string) {
		seen = true
		interval, _ = d.duration(v, p)
	})
	if !seen && resolve(n).Kind == yaml.MappingNode {
		d.errs.fail(field(path, "interval"), resolve(n).Line, "required when checkpoint is set")
	}
	return interval
}
