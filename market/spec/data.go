package spec

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Output is a file or directory a task produces: when the task succeeds
// it is kept, replicated and handed to the tasks that take it as input
// (docs/data.md).
type Output struct {
	// Path is relative to the task's work directory.
	Path string `json:"path"`
	// Max bounds the output's bytes; 0 means MaxOutputBytes.
	Max int64 `json:"max,omitempty"`
}

// Input is placed in a task's work directory before it starts: outputs
// of an ancestor task (From), or content uploaded by the client (Data;
// Local before the upload).
type Input struct {
	// From names the task whose outputs are taken.
	From string `json:"from,omitempty"`
	// Output selects one output of From, or a path inside one; empty:
	// all of them.
	Output string `json:"output,omitempty"`
	// Replica is whose outputs, for a From with replicas: an index, or
	// AllReplicas (each under Path/INDEX/).
	Replica int `json:"replica,omitempty"`
	// Data is the ID of an uploaded input's manifest; Name, the path it
	// was read from, for messages.
	Data string `json:"data,omitempty"`
	Name string `json:"name,omitempty"`
	// Local is a path on the submitting machine; the client uploads it
	// and replaces it with Data before the job leaves for a node.
	Local string `json:"local,omitempty"`
	// Path is where the input is placed, relative to the work directory
	// ("." for the directory itself).
	Path string `json:"path"`
}

// AllReplicas as Input.Replica takes the outputs of every replica.
const AllReplicas = -1

// Limits on data fields.
const (
	// MaxOutputs and MaxInputs bound a task's lists.
	MaxOutputs = 64
	MaxInputs  = 64
	// MaxDataPathLen bounds an output's or input's path, and a local one.
	MaxDataPathLen = 1024
	// MaxOutputBytes bounds one output, and is its default limit: what
	// one manifest may list (checkpoint.MaxTotalBytes).
	MaxOutputBytes = 16 << 30
)

var (
	outputFields = []string{"path", "max"}
	inputFields  = []string{"from", "output", "replica", "data", "name", "local", "path"}
)

// outputs decodes a task's outputs: paths, or {path, max}.
func (d *decoder) outputs(n *yaml.Node, p string) []Output {
	elems, ok := d.sequence(n, p, MaxOutputs, "outputs")
	if !ok {
		return nil
	}
	var out []Output
	for i, e := range elems {
		ep := index(p, i)
		var o Output
		if r := resolve(e); r.Kind == yaml.ScalarNode {
			o.Path, _ = d.str(e, ep)
		} else {
			d.mapping(e, ep, outputFields, func(key string, v *yaml.Node, fp string) {
				switch key {
				case "path":
					o.Path, _ = d.str(v, fp)
				case "max":
					o.Max, _ = d.size(v, fp)
				}
			})
		}
		out = append(out, o)
	}
	return out
}

// inputs decodes a task's inputs.
func (d *decoder) inputs(n *yaml.Node, p string) []Input {
	elems, ok := d.sequence(n, p, MaxInputs, "inputs")
	if !ok {
		return nil
	}
	var in []Input
	for i, e := range elems {
		in_ := Input{Replica: unsetReplica}
		d.mapping(e, index(p, i), inputFields, func(key string, v *yaml.Node, fp string) {
			switch key {
			case "from":
				in_.From, _ = d.str(v, fp)
			case "output":
				in_.Output, _ = d.str(v, fp)
			case "replica":
				if r := resolve(v); r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str" && r.Value == "all" {
					in_.Replica = AllReplicas
				} else if x, ok := d.integer(v, fp); ok {
					in_.Replica = x
					if x < 0 {
						d.errs.fail(fp, r.Line, "must be a replica index or all, got %d", x)
					}
				}
			case "data":
				in_.Data, _ = d.str(v, fp)
			case "name":
				in_.Name, _ = d.str(v, fp)
			case "local":
				in_.Local, _ = d.str(v, fp)
			case "path":
				in_.Path, _ = d.str(v, fp)
			}
		})
		in = append(in, in_)
	}
	return in
}

// unsetReplica marks an input whose replica the spec leaves to the
// default, which depends on the producer (dataDefaults).
const unsetReplica = -2

// dataDefaults fills what inputs leave out, once every task is known: a
// producer's replica (all of them for a task with replicas, else 0), a
// producer's only output as the one taken, and where the input goes
// (the output's own path, the work directory for several outputs, a
// local path's base name).
func (j *Job) dataDefaults() {
	for ti := range j.Tasks {
		for ii := range j.Tasks[ti].Inputs {
			in := &j.Tasks[ti].Inputs[ii]
			prod, _ := j.Task(in.From)
			if in.Replica == unsetReplica {
				in.Replica = 0
				if prod != nil && prod.Replicas > 1 {
					in.Replica = AllReplicas
				}
			}
			if in.From != "" && in.Output == "" && prod != nil && len(prod.Outputs) == 1 {
				in.Output = prod.Outputs[0].Path
			}
			if in.Path == "" {
				switch {
				case in.From != "" && in.Output != "":
					in.Path = in.Output
				case in.From != "":
					in.Path = "."
				case in.Local != "":
					in.Path = path.Base(strings.TrimRight(in.Local, "/"))
				}
			}
		}
	}
}

// checkData checks task ti's outputs and inputs against the job.
func (j *Job) checkData(l *errorList, ti int, anc func(a, b int) bool) {
	t := &j.Tasks[ti]
	p := index("tasks", ti)
	if len(t.Outputs) > MaxOutputs {
		l.add(field(p, "outputs"), "%d outputs, over the limit of %d", len(t.Outputs), MaxOutputs)
	}
	if len(t.Inputs) > MaxInputs {
		l.add(field(p, "inputs"), "%d inputs, over the limit of %d", len(t.Inputs), MaxInputs)
	}
	for i, o := range t.Outputs {
		op := index(field(p, "outputs"), i)
		if why := RelPath(o.Path, false); why != "" {
			l.add(field(op, "path"), "%s", why)
			continue
		}
		switch {
		case o.Max < 0:
			l.add(field(op, "max"), "negative size %d", o.Max)
		case o.Max > MaxOutputBytes:
			l.add(field(op, "max"), "%d bytes is over the limit of %d per output", o.Max, int64(MaxOutputBytes))
		}
		for k := range i {
			if overlaps(o.Path, t.Outputs[k].Path) {
				l.add(field(op, "path"), "%s overlaps outputs[%d] (%s)", quote(o.Path), k, quote(t.Outputs[k].Path))
				break
			}
		}
	}
	byName := map[string]int{}
	for i, x := range j.Tasks {
		if _, dup := byName[x.Name]; !dup {
			byName[x.Name] = i
		}
	}
	var placed []placement
inputs:
	for i, in := range t.Inputs {
		ip := index(field(p, "inputs"), i)
		given := 0
		for _, s := range []string{in.From, in.Data, in.Local} {
			if s != "" {
				given++
			}
		}
		if given != 1 {
			l.add(ip, "give exactly one of from, data and local")
			continue
		}
		switch {
		case in.From != "":
			j.checkFrom(l, ti, ip, in, byName, anc)
		case in.Data != "":
			if !ValidDataID(in.Data) {
				l.add(field(ip, "data"), "not a manifest ID (64 lowercase hex digits)")
			}
			if len(in.Name) > MaxDataPathLen || !utf8.ValidString(in.Name) {
				l.add(field(ip, "name"), "longer than %d bytes or not UTF-8", MaxDataPathLen)
			}
		case in.Local != "":
			if len(in.Local) > MaxDataPathLen || strings.ContainsRune(in.Local, 0) || !utf8.ValidString(in.Local) {
				l.add(field(ip, "local"), "longer than %d bytes, or not a path", MaxDataPathLen)
			}
		}
		if in.From == "" && (in.Output != "" || in.Replica != 0) {
			l.add(ip, "output and replica apply only to from")
		}
		if why := RelPath(in.Path, true); why != "" {
			l.add(field(ip, "path"), "%s", why)
			continue
		}
		for _, p := range j.placements(in) {
			for _, q := range placed {
				if overlaps(p, q.path) {
					l.add(field(ip, "path"), "places %s where inputs[%d] places %s", quote(p), q.input, quote(q.path))
					continue inputs
				}
			}
			placed = append(placed, placement{i, p})
		}
	}
}

type placement struct {
	input int
	path  string
}

// placements are the paths an input writes in the work directory.
func (j *Job) placements(in Input) []string {
	prod, _ := j.Task(in.From)
	switch {
	case prod == nil || in.Path != ".":
		return []string{in.Path}
	case in.Replica == AllReplicas:
		return replicaDirs(prod.Replicas)
	case in.Output != "":
		return []string{in.Path}
	}
	var out []string
	for _, o := range prod.Outputs {
		out = append(out, o.Path)
	}
	return out
}

func replicaDirs(n int) []string {
	out := make([]string, n)
	for r := range n {
		out[r] = strconv.Itoa(r)
	}
	return out
}

// checkFrom checks an input taken from another task's outputs.
func (j *Job) checkFrom(l *errorList, ti int, ip string, in Input, byName map[string]int, anc func(a, b int) bool) {
	pi, ok := byName[in.From]
	switch {
	case !ok:
		l.add(field(ip, "from"), "unknown task %s", quote(in.From))
		return
	case pi == ti:
		l.add(field(ip, "from"), "a task cannot take its own outputs")
		return
	case anc(ti, pi):
		l.add(field(ip, "from"), "a cycle through inputs: %s runs after %s (it depends on it), so cannot feed it", displayName(in.From), displayName(j.Tasks[ti].Name))
		return
	case !anc(pi, ti):
		l.add(field(ip, "from"), "task %s is not an ancestor of %s: add it to after", displayName(in.From), displayName(j.Tasks[ti].Name))
		return
	}
	prod := j.Tasks[pi]
	if len(prod.Outputs) == 0 {
		l.add(field(ip, "from"), "task %s declares no outputs", displayName(in.From))
		return
	}
	if in.Replica < AllReplicas || in.Replica >= prod.Replicas {
		l.add(field(ip, "replica"), "%d out of range 0..%d (or all)", in.Replica, prod.Replicas-1)
	}
	if in.Output == "" {
		return
	}
	if why := RelPath(in.Output, false); why != "" {
		l.add(field(ip, "output"), "%s", why)
		return
	}
	for _, o := range prod.Outputs {
		if in.Output == o.Path || strings.HasPrefix(in.Output, o.Path+"/") {
			return
		}
	}
	l.add(field(ip, "output"), "%s is not among the outputs of %s", quote(in.Output), displayName(in.From))
}

// RelPath says what is wrong with a path relative to a work directory,
// or returns "": not empty, not absolute, clean, no "..", UTF-8 without
// NUL, at most MaxDataPathLen bytes; "." only where dot allows it.
func RelPath(p string, dot bool) string {
	switch {
	case p == "":
		return "required"
	case len(p) > MaxDataPathLen:
		return "longer than the limit of 1024 bytes"
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return "not valid UTF-8 or holds a NUL byte"
	case strings.HasPrefix(p, "/"):
		return quote(p) + " is absolute: give a path relative to the work directory"
	case p == "." && dot:
		return ""
	case p == "..", strings.HasPrefix(p, "../"), strings.Contains(p, "/../"), strings.HasSuffix(p, "/.."):
		return quote(p) + " leaves the work directory"
	case path.Clean(p) != p || p == ".":
		return quote(p) + " is not a clean path (write " + quote(path.Clean(p)) + ")"
	}
	return ""
}

// overlaps reports whether one of two clean relative paths is the other
// or lies inside it ("." holds everything).
func overlaps(a, b string) bool {
	return a == b || a == "." || b == "." || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// ValidDataID reports whether s is a manifest or chunk ID: a lowercase
// hex SHA-256.
func ValidDataID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// LocalInputs lists the inputs still naming a local path, as "TASK:
// PATH": a job must not leave the client with any.
func (j *Job) LocalInputs() []string {
	var out []string
	for _, t := range j.Tasks {
		for _, in := range t.Inputs {
			if in.Local != "" {
				out = append(out, t.Name+": "+in.Local)
			}
		}
	}
	return out
}

// dataText is the text a task's data fields hold, as MaxJobBytes counts.
func (t *Task) dataText() int {
	n := 0
	for _, o := range t.Outputs {
		n += len(o.Path) + 1
	}
	for _, in := range t.Inputs {
		n += len(in.From) + len(in.Output) + len(in.Data) + len(in.Name) + len(in.Local) + len(in.Path) + 6
	}
	return n
}
