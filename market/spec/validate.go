package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agora-sched/agora/market/names"
)

// reservedEnvPrefix starts the names of variables Agora sets itself.
const reservedEnvPrefix = "AGORA_"

// Validate checks a Job built in code or received over the wire against
// the rules Parse applies, and returns every problem found, up to
// MaxErrors, as a *ValidationError with field paths in spec terms (for
// example "tasks[0].resources.cpu"). It applies no defaults: a Job's
// builder sets Type, Priority, Retries, Replicas and the CPU request itself
// (see DefaultPriority and the other defaults). It cannot check that the
// deadline is in the future, having no clock; Parse does.
func (j *Job) Validate() error {
	if j == nil {
		return single("job is nil")
	}
	l := &errorList{}
	j.check(l)
	return l.err()
}

// check records every rule the job breaks.
func (j *Job) check(l *errorList) {
	checkText(l, "name", j.Name, MaxJobNameLen, true)
	checkText(l, "type", j.Type, MaxTypeLen, true)
	if j.Priority < MinPriority || j.Priority > MaxPriority {
		l.add("priority", "%d out of range %d..%d", j.Priority, MinPriority, MaxPriority)
	}
	checkDuration(l, "pending_timeout", j.PendingTimeout)
	switch {
	case len(j.Tasks) == 0:
		l.add("tasks", "required: at least one task")
		return
	case len(j.Tasks) > MaxTasks:
		l.add("tasks", "%d tasks, over the limit of %d", len(j.Tasks), MaxTasks)
		return
	}
	size := len(j.Name) + len(j.Type)
	replicas := 0
	for i := range j.Tasks {
		if l.full() {
			return
		}
		j.Tasks[i].check(l, index("tasks", i))
		size += j.Tasks[i].textSize()
		replicas += max(j.Tasks[i].Replicas, 1)
	}
	if size > MaxJobBytes {
		l.add("tasks", "the job holds %d bytes of text, over the limit of %d", size, MaxJobBytes)
	}
	if replicas > MaxJobReplicas {
		l.add("tasks", "%d task replicas in all, over the limit of %d per job (split the job)", replicas, MaxJobReplicas)
	}
	j.checkNames(l)
	deps := j.deps(l)
	sorted, cycle := order(deps)
	if cycle != nil {
		l.add("tasks", "dependency cycle: %s", j.cycleText(cycle))
		return
	}
	anc := ancestry(deps, sorted)
	for i := range j.Tasks {
		if len(j.Tasks[i].Inputs) > 0 || len(j.Tasks[i].Outputs) > 0 {
			j.checkData(l, i, anc)
		}
	}
}

// checkNames reports task names used more than once.
func (j *Job) checkNames(l *errorList) {
	first := make(map[string]int, len(j.Tasks))
	for i, t := range j.Tasks {
		if t.Name == "" {
			continue
		}
		if f, dup := first[t.Name]; dup {
			l.add(field(index("tasks", i), "name"), "duplicate task name %s (first used by tasks[%d])", quote(t.Name), f)
			continue
		}
		first[t.Name] = i
	}
}

// check records every rule the task at path breaks, except those about
// its dependencies, which need the whole job.
func (t *Task) check(l *errorList, path string) {
	checkTaskName(l, field(path, "name"), t.Name)
	checkCommand(l, field(path, "command"), t.Command)
	checkEnv(l, field(path, "env"), t.Env)
	checkRequest(l, field(path, "resources"), t.Request)
	if len(t.After) > MaxTasks {
		l.add(field(path, "after"), "%d dependencies, over the limit of %d", len(t.After), MaxTasks)
	}
	checkDuration(l, field(path, "estimate"), t.Estimate)
	checkDuration(l, field(path, "timeout"), t.Timeout)
	checkDuration(l, field(path, "checkpoint.interval"), t.CheckpointInterval)
	if t.CheckpointInterval > 0 && t.CheckpointInterval < MinCheckpointInterval {
		l.add(field(path, "checkpoint.interval"), "%s is shorter than the minimum of %s", t.CheckpointInterval, MinCheckpointInterval)
	}
	if t.Retries < 0 || t.Retries > MaxRetries {
		l.add(field(path, "retries"), "%d out of range 0..%d", t.Retries, MaxRetries)
	}
	if t.Replicas < 1 || t.Replicas > MaxReplicas {
		l.add(field(path, "replicas"), "%d out of range 1..%d", t.Replicas, MaxReplicas)
	}
	if t.Array != "" {
		switch a, err := ParseArray(t.Array); {
		case err != nil:
			l.add(field(path, "array"), "%s", err)
		case len(a.Indices) != t.Replicas:
			l.add(field(path, "array"), "%d indices, but replicas is %d", len(a.Indices), t.Replicas)
		case t.Gang:
			l.add(field(path, "array"), "an array's replicas run on their own: not with gang")
		}
	}
	if len(t.ArrayValues) > 0 {
		checkArrayValues(l, field(path, "array_values"), *t)
	}
	if t.Gang && t.Replicas == 1 {
		l.add(field(path, "gang"), "needs replicas > 1 (replicas is 1)")
	}
	if t.Pack && !t.Gang {
		l.add(field(path, "pack"), "only applies to a gang: set gang: true")
	}
	checkImage(l, path, t)
}

// imageRef is an OCI image reference: optional registry host and port,
// lower-case path components, an optional tag and an optional digest.
var imageRef = regexp.MustCompile(`^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$`)

var imageIDForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// checkImage checks an image task's reference, pin and label.
func checkImage(l *errorList, path string, t *Task) {
	if t.ImageSize < 0 || t.ImageSize > MaxImageSize {
		l.add(field(path, "image_size"), "%d bytes: want 0 to %d (1 TiB)", t.ImageSize, int64(MaxImageSize))
	} else if t.ImageSize > 0 && t.Image == "" {
		l.add(field(path, "image_size"), "set without an image")
	}
	switch {
	case t.Image == "" && t.ImageID != "":
		l.add(field(path, "image_id"), "set without an image")
	case t.Image == "":
		return
	case len(t.Image) > MaxImageRefLen:
		l.add(field(path, "image"), "%d characters, over the limit of %d", len(t.Image), MaxImageRefLen)
	case !imageRef.MatchString(t.Image):
		l.add(field(path, "image"), "%s is not an image reference (name[:tag][@sha256:digest], lower-case name)", quote(t.Image))
	}
	if t.ImageID != "" && !imageIDForm.MatchString(t.ImageID) {
		l.add(field(path, "image_id"), "%s is not sha256: and 64 lower-case hex digits", quote(t.ImageID))
	}
	if t.Request.Labels[ContainerLabel] != "yes" {
		l.add(field(path, "resources.labels."+ContainerLabel), "an image task requires its node's label %s=yes", ContainerLabel)
	}
}

// textSize is the length of the text the task holds, as MaxJobBytes counts it.
func (t *Task) textSize() int {
	n := len(t.Name) + len(t.Request.Site) + len(t.Request.GPU.Model) + t.dataText() + len(t.Image) + len(t.ImageID)
	for _, a := range t.Command {
		n += len(a) + 1
	}
	for k, v := range t.Env {
		n += len(k) + len(v) + 2
	}
	for _, a := range t.After {
		n += len(a) + 1
	}
	for k, v := range t.Request.Labels {
		n += len(k) + len(v) + 2
	}
	for _, d := range t.Request.Devices {
		n += len(d.Kind) + len(d.Model) + 2
	}
	return n
}

// checkText checks a free-text name: valid UTF-8, printable, at most max
// characters, and not empty when required.
func checkText(l *errorList, path, s string, max int, required bool) {
	switch {
	case s == "":
		if required {
			l.add(path, "required")
		}
		return
	case !utf8.ValidString(s):
		l.add(path, "%s is not valid UTF-8", quote(s))
		return
	}
	if n := utf8.RuneCountInString(s); n > max {
		l.add(path, "%d characters, over the limit of %d", n, max)
		return
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			l.add(path, "%s contains the non-printable character %U", quote(s), r)
			return
		}
	}
}

// checkTaskName checks a task name, which also names files and directories
// on the node that runs the task.
func checkTaskName(l *errorList, path, name string) {
	switch {
	case name == "":
		l.add(path, "required")
	case !names.TaskName(name) || name == "." || name == "..":
		l.add(path, "invalid task name %s: use 1 to %d letters, digits, '_', '.' or '-' (not \".\" or \"..\")", quote(name), MaxTaskNameLen)
	}
}

// checkCommand checks an argv.
func checkCommand(l *errorList, path string, argv []string) {
	switch {
	case len(argv) == 0:
		l.add(path, "required: a non-empty list of arguments, or a shell command string")
		return
	case len(argv) > MaxCommandArgs:
		l.add(path, "%d arguments, over the limit of %d", len(argv), MaxCommandArgs)
		return
	}
	if argv[0] == "" {
		l.add(index(path, 0), "empty program name")
	}
	total := 0
	for i, a := range argv {
		total += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			l.add(index(path, i), "contains a NUL byte")
		}
	}
	if total > MaxCommandBytes {
		l.add(path, "%d bytes of arguments, over the limit of %d", total, MaxCommandBytes)
	}
}

// checkEnv checks environment variable names and values.
func checkEnv(l *errorList, path string, env map[string]string) {
	if len(env) > MaxEnvEntries {
		l.add(path, "%d variables, over the limit of %d", len(env), MaxEnvEntries)
		return
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v, p := env[k], keyPath(path, k)
		total += len(k) + len(v) + 2
		switch {
		case len(k) > MaxEnvNameLen:
			l.add(p, "name is %d bytes, over the limit of %d", len(k), MaxEnvNameLen)
		case !names.EnvName(k):
			l.add(p, "invalid variable name %s: use letters, digits and '_', not starting with a digit", quote(k))
		case strings.HasPrefix(strings.ToUpper(k), reservedEnvPrefix):
			l.add(p, "names starting with %s are reserved for Agora", reservedEnvPrefix)
		}
		if strings.IndexByte(v, 0) >= 0 {
			l.add(p, "value contains a NUL byte")
		}
	}
	if total > MaxEnvBytes {
		l.add(path, "%d bytes of variables, over the limit of %d", total, MaxEnvBytes)
	}
}

// checkDuration checks an optional duration: zero (none) or positive, and
// at most MaxDuration.
func checkDuration(l *errorList, path string, d time.Duration) {
	switch {
	case d < 0:
		l.add(path, "%s must be positive (or zero for none)", d)
	case d > MaxDuration:
		l.add(path, "%s is over the limit of %s", d, MaxDuration)
	}
}

// CheckImage applies the spec's image rules to one task, for a task that
// arrives over the wire rather than in a job.
func CheckImage(t *Task) error {
	var l errorList
	checkImage(&l, "", t)
	return l.err()
}

// Pinned reports the first image task without its image_id: a job is
// accepted only pinned, so that every node that runs one of its tasks
// runs the same image, whatever its own tags say.
func (j *Job) Pinned() error {
	for i, t := range j.Tasks {
		if t.Image != "" && t.ImageID == "" {
			return &ValidationError{Errors: []FieldError{{Path: index("tasks", i) + ".image_id",
				Msg: fmt.Sprintf("image %s is not pinned: give image_id, or submit through agora submit or run, which ask their node for it", t.Image)}}}
		}
	}
	return nil
}
