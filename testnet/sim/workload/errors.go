package workload

import "fmt"

// ParseError is a problem with one input: a file or reader named Source,
// at Line when it is known (1-based; 0 for none), in Field when one is to
// blame ("field 4 (run time)", "nodes[2].latency", "cpu_milli").
type ParseError struct {
	Source string
	Line   int
	Field  string
	Err    error
}

// Error renders "workload: SOURCE line N: FIELD: PROBLEM", leaving out the
// parts that are not known.
func (e *ParseError) Error() string {
	s := "workload: " + e.Source
	if e.Source == "" {
		s = "workload:"
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d", e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

func parseErr(src string, line int, field string, format string, args ...any) error {
	return &ParseError{Source: src, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}
