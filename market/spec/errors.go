package spec

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/yamlnode"
)

// FieldError is one problem with a spec or a Job, located by field path.
type FieldError struct {
	// Path names the field in spec terms, for example
	// "tasks[1].resources.gpu.memory"; it is empty for a problem with the
	// spec as a whole, such as its size or YAML syntax.
	Path string `json:"path"`
	// Msg says what is wrong, on one line.
	Msg string `json:"msg"`
	// Line is the spec line the problem was found on, or 0 when unknown
	// (always 0 for a Job built in code).
	Line int `json:"line,omitempty"`
}

// String renders the error as "path: msg", followed by " (line N)" when
// the line is known.
func (e FieldError) String() string {
	s := e.Msg
	if e.Path != "" {
		s = e.Path + ": " + e.Msg
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s
}

// ValidationError is every problem found in a spec or a Job, up to
// MaxErrors of them, in spec order where lines are known.
type ValidationError struct {
	// Errors lists the problems found.
	Errors []FieldError `json:"errors"`
	// Truncated says that more problems were found than Errors lists.
	Truncated bool `json:"truncated,omitempty"`
}

// Error prints the problems one per line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fe.String())
	}
	if e.Truncated {
		fmt.Fprintf(&b, "\n(too many errors: only the first %d are shown)", len(e.Errors))
	}
	return b.String()
}

// errorList collects problems while a spec is decoded and a Job checked.
// Problems found while decoding are recorded as failed paths, so that the
// model checks that follow do not report their consequences again.
type errorList struct {
	list      []FieldError
	truncated bool
	stopped   bool       // decoding gave up early, the problem recorded
	root      *yaml.Node // the spec, for finding lines; nil for a Job built in code
	failed    []string   // paths with decoding problems
}

// full reports whether looking for more problems is wasted work: one has
// already been dropped for want of room, or decoding gave up.
func (l *errorList) full() bool { return l.truncated || l.stopped }

func (l *errorList) push(e FieldError) {
	if len(l.list) >= MaxErrors {
		l.truncated = true
		return
	}
	l.list = append(l.list, e)
}

// fail records a decoding problem at path, found on the given line.
func (l *errorList) fail(path string, line int, format string, args ...any) {
	l.failed = append(l.failed, path)
	l.push(FieldError{Path: path, Msg: fmt.Sprintf(format, args...), Line: line})
}

// add records a rule broken by the model at path, unless decoding already
// reported a problem there, beneath it, or at a field containing it.
func (l *errorList) add(path string, format string, args ...any) {
	for _, f := range l.failed {
		if f == path || under(path, f) || (under(f, path) && path != "tasks" && path != "") {
			return
		}
	}
	l.push(FieldError{Path: path, Msg: fmt.Sprintf(format, args...), Line: l.line(path)})
}

// line finds the spec line of path, or of the nearest field containing it.
func (l *errorList) line(path string) int {
	if l.root == nil {
		return 0
	}
	return yamlnode.LineOf(l.root, path)
}

// err returns the collected problems as a *ValidationError, or nil.
func (l *errorList) err() error {
	if len(l.list) == 0 {
		return nil
	}
	sort.SliceStable(l.list, func(i, j int) bool { return l.list[i].Line < l.list[j].Line })
	return &ValidationError{Errors: l.list, Truncated: l.truncated}
}

// under reports whether path p lies strictly beneath path parent.
func under(p, parent string) bool {
	if parent == "" {
		return p != ""
	}
	return len(p) > len(parent) && strings.HasPrefix(p, parent) && (p[len(parent)] == '.' || p[len(parent)] == '[')
}
