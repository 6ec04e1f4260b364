package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// recorder is a LogSink that keeps everything it is given.
type recorder struct {
	mu       sync.Mutex
	streams  map[string]*bytes.Buffer
	maxChunk int
	bad      []string // unexpected stream names
}

func newRecorder() *recorder {
	return &recorder{streams: map[string]*bytes.Buffer{
		StreamStdout: {},
		StreamStderr: {},
	}}
}

func (r *recorder) Write(stream string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.streams[stream]
	if !ok {
		r.bad = append(r.bad, stream)
		return
	}
	b.Write(data)
	r.maxChunk = max(r.maxChunk, len(data))
}

func (r *recorder) text(stream string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[stream].String()
}

// waitFor polls until stream contains substr.
func (r *recorder) waitFor(t *testing.T, stream, substr string) {
	t.Helper()
	waitfor.Cond(t, 5*time.Second, fmt.Sprintf("%s to contain %q", stream, substr), func() bool {
		return strings.Contains(r.text(stream), substr)
	})
}

// doneRecorder counts done calls and hands results to the test.
type doneRecorder struct {
	calls atomic.Int32
	ch    chan Result
}

func newDone() *doneRecorder { return &doneRecorder{ch: make(chan Result, 4)} }

func (d *doneRecorder) fn(res Result) {
	d.calls.Add(1)
	d.ch <- res
}

// wait returns the first result, failing the test after timeout.
func (d *doneRecorder) wait(t *testing.T, timeout time.Duration) Result {
	t.Helper()
	select {
	case res := <-d.ch:
		return res
	case <-time.After(timeout):
		t.Fatalf("done not called within %s", timeout)
		return Result{}
	}
}

// newTestRunner returns a Runner without cgroups whose tasks are all gone
// when the test ends.
func newTestRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	opts.DisableCgroups = opts.CgroupParent == "" || opts.DisableCgroups
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 500 * time.Millisecond
	}
	r := NewRunner(opts)
	t.Cleanup(func() {
		for _, id := range r.Running() {
			r.Kill(id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Wait(ctx); err != nil {
			t.Errorf("runner did not drain: %v", err)
		}
	})
	return r
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func testSpec(t *testing.T, cmd []string) Spec {
	return Spec{
		JobID:   "job-1",
		Task:    "train",
		Command: cmd,
		WorkDir: t.TempDir(),
		Grace:   time.Second,
	}
}

// processGone reports whether pid no longer runs (absent, or a zombie
// awaiting its reaper).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return zombie(pid)
}

// firstLineInt parses the first line of s as a pid.
func firstLineInt(t *testing.T, s string) int {
	t.Helper()
	line, _, _ := strings.Cut(s, "\n")
	var n int
	if _, err := fmt.Sscanf(line, "%d", &n); err != nil || n <= 0 {
		t.Fatalf("no pid in output %q", s)
	}
	return n
}
