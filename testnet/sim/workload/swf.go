package workload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// swfFields names the 18 fields of a Standard Workload Format line, for
// messages; field n is swfFields[n-1].
var swfFields = [18]string{
	"job number", "submit time", "wait time", "run time", "allocated processors",
	"average CPU time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user", "group", "executable", "queue",
	"partition", "preceding job", "think time",
}

// Field numbers (1-based, as the format defines them) that ReadSWF uses.
const (
	swfJob       = 1
	swfSubmit    = 2
	swfWait      = 3
	swfRun       = 4
	swfAllocProc = 5
	swfReqProc   = 8
	swfReqTime   = 9
	swfUser      = 12
	swfQueue     = 15
)

// maxSWFLine bounds one line of an SWF log.
const maxSWFLine = 1 << 20

// SWFHeader is what an SWF log's header comments declare.
type SWFHeader struct {
	// MaxProcs and MaxNodes are the machine's size from the "; MaxProcs:"
	// and "; MaxNodes:" lines, zero when absent.
	MaxProcs int
	MaxNodes int
	// Fields maps each "; Key: value" header line's key to its value; a
	// repeated key keeps its first value.
	Fields map[string]string
	// Lines are the header comment lines as written, ';' included, so a
	// copyright notice can be carried along intact.
	Lines []string
}

// SWFOptions choose what part of a log ReadSWF keeps.
type SWFOptions struct {
	// Name names the log in the workload and in errors; "swf" when empty.
	Name string
	// Limit keeps only the first Limit jobs that are kept (0: all); the
	// rest of the log is not read.
	Limit int
	// From and To keep the jobs submitted in [From, To), as offsets from
	// the log's start; To <= 0 means no end.
	From, To time.Duration
	// Rebase shifts the kept jobs so that the first submits at zero.
	Rebase bool
}

// OpenSWF reads the SWF log at path, gzipped or not (told by its first
// bytes); opts.Name defaults to the file's base name.
func OpenSWF(path string, opts SWFOptions) (*Workload, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if opts.Name == "" {
		opts.Name = filepath.Base(path)
	}
	return ReadSWF(r, opts)
}

// ReadSWF reads a log in the Standard Workload Format of the Parallel
// Workloads Archive. Lines starting with ';' are the header; blank lines
// and trailing white space are ignored; every other line must hold the
// 18 numeric fields, or ReadSWF fails with a *ParseError naming the line
// and the field.
//
// Each job becomes one task, "main", asking for one core (1000
// millicores, no memory) per processor, with Replicas = processors and
// Gang = true when processors > 1. Processors is the requested count
// (field 8), or the allocated count (field 5) when field 8 is -1. Jobs
// whose run time (field 4) or processors are zero or less — cancelled
// before they started — are skipped and counted in Skipped, and so are
// jobs wider than spec.MaxReplicas (the simulator skips, and counts,
// those wider than its machine). The true
// runtime is field 4, the task's Estimate field 9 (the user's requested
// time) when positive, User field 12, and the job's Type is
// "swf-u<user>-q<queue>" (field 15), a class for runtime prediction.
// Priority is the default, 5; retries are zero.
func ReadSWF(r io.Reader, opts SWFOptions) (*Workload, error) {
	name := opts.Name
	if name == "" {
		name = "swf"
	}
	w := &Workload{Name: name, SWF: &SWFHeader{Fields: map[string]string{}}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSWFLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "":
			continue
		case text[0] == ';':
			w.SWF.header(strings.TrimRightFunc(sc.Text(), isSpace))
			continue
		}
		job, skip, err := swfJobLine(text)
		if err != nil {
			return nil, &ParseError{Source: name, Line: line, Field: err.field, Err: err.err}
		}
		if skip != "" {
			w.skip(skip)
			continue
		}
		if job.Submit < opts.From || (opts.To > 0 && job.Submit >= opts.To) {
			continue
		}
		w.Jobs = append(w.Jobs, job)
		if opts.Limit > 0 && len(w.Jobs) >= opts.Limit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{Source: name, Line: line + 1, Err: err}
	}
	w.Sort()
	if opts.Rebase {
		w.Rebase()
	}
	if err := w.check(false); err != nil {
		return nil, err
	}
	return w, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' }

// header records one header comment line.
func (h *SWFHeader) header(raw string) {
	h.Lines = append(h.Lines, raw)
	rest := strings.TrimPrefix(raw, ";")
	// A key follows "; " directly; indented lines continue the one before.
	if !strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "  ") {
		return
	}
	key, value, ok := strings.Cut(rest[1:], ":")
	if !ok || key == "" || strings.ContainsAny(key, " \t") {
		return
	}
	value = strings.TrimSpace(value)
	if _, dup := h.Fields[key]; !dup {
		h.Fields[key] = value
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		return
	}
	switch key {
	case "MaxProcs":
		h.MaxProcs = n
	case "MaxNodes":
		h.MaxNodes = n
	}
}

// fieldError is a problem with one field of a line.
type fieldError struct {
	field string
	err   error
}

// swfJobLine turns one job line into a job, or names why it is skipped.
func swfJobLine(text string) (Job, string, *fieldError) {
	fs := strings.Fields(text)
	if len(fs) != len(swfFields) {
		return Job{}, "", &fieldError{"", fmt.Errorf("%d fields, want %d", len(fs), len(swfFields))}
	}
	var v [len(swfFields) + 1]float64
	for i, f := range fs {
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			v[i+1] = float64(n)
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Job{}, "", swfFieldErr(i+1, "%q is not a number", f)
		}
		v[i+1] = x
	}
	for _, n := range []int{swfJob, swfAllocProc, swfReqProc, swfUser, swfQueue} {
		if v[n] != math.Trunc(v[n]) || math.Abs(v[n]) > 1<<53 {
			return Job{}, "", swfFieldErr(n, "%s is not a whole number", fs[n-1])
		}
	}
	for _, n := range []int{swfSubmit, swfWait, swfRun, swfReqTime} {
		if v[n] > spec.MaxDuration.Seconds()*100 {
			return Job{}, "", swfFieldErr(n, "%s seconds is out of range", fs[n-1])
		}
	}
	procs := v[swfReqProc]
	if procs == -1 {
		procs = v[swfAllocProc]
	}
	switch {
	case v[swfRun] < 0:
		return Job{}, "run time unknown", nil
	case v[swfRun] == 0:
		return Job{}, "run time zero", nil
	case procs < 0:
		return Job{}, "processors unknown", nil
	case procs == 0:
		return Job{}, "processors zero", nil
	case v[swfSubmit] < 0:
		return Job{}, "submit time unknown", nil
	case procs > spec.MaxReplicas:
		return Job{}, fmt.Sprintf("wider than %d processors", spec.MaxReplicas), nil
	}
	runtime := seconds(v[swfRun])
	user, queue := int64(v[swfUser]), int64(v[swfQueue])
	task := spec.Task{
		Name:     "main",
		Command:  sleepCommand(runtime),
		Request:  resource.Request{CPU: 1000},
		Replicas: int(procs),
		Gang:     procs > 1,
	}
	if v[swfReqTime] > 0 {
		task.Estimate = min(seconds(v[swfReqTime]), spec.MaxDuration)
	}
	id := "swf-" + strconv.FormatInt(int64(v[swfJob]), 10)
	var waited time.Duration
	if v[swfWait] >= 0 {
		waited = seconds(v[swfWait])
	}
	return Job{
		RecordedWait: waited,
		Recorded:     v[swfWait] >= 0,
		ID:           id,
		User:         strconv.FormatInt(user, 10),
		Submit:       seconds(v[swfSubmit]),
		Spec: spec.Job{
			Name:     id,
			Type:     fmt.Sprintf("swf-u%d-q%d", user, queue),
			Priority: spec.DefaultPriority,
			Tasks:    []spec.Task{task},
		},
		Runtimes: map[string]time.Duration{"main": runtime},
	}, "", nil
}

func swfFieldErr(n int, format string, args ...any) *fieldError {
	return &fieldError{fmt.Sprintf("field %d (%s)", n, swfFields[n-1]), fmt.Errorf(format, args...)}
}

// seconds converts a count of seconds to a duration, to the millisecond.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1000)) * time.Millisecond
}

// sleepCommand is the command a replayed task would run on a real node:
// a sleep for its runtime.
func sleepCommand(d time.Duration) []string {
	return []string{"sleep", strconv.FormatFloat(d.Seconds(), 'f', -1, 64)}
}
