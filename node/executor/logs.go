package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/store"
)

// MaxLogPage bounds a page of a task's output.
const MaxLogPage = 1 << 20

// ExpireExecutions deletes the execution records and task logs of
// attempts this node ran that finished more than retention ago, and then
// the task directories of jobs it keeps no execution of.
func (x *Executor) ExpireExecutions(now time.Time, retention time.Duration) (int, error) {
	var due []Execution
	err := x.execs.Scan("", func(_ string, ex Execution) (bool, error) {
		if !ex.Finished.IsZero() && !ex.Finished.Add(retention).After(now) {
			due = append(due, ex)
		}
		return true, nil
	})
	deleted := 0
	for _, ex := range due {
		if derr := x.store.DeleteLog(ex.Stream); derr != nil {
			log.Warnw("expire task log", "stream", ex.Stream, "err", derr)
			continue
		}
		if derr := x.execs.Delete(ex.Stream); derr != nil {
			log.Warnw("expire execution", "stream", ex.Stream, "err", derr)
			continue
		}
		deleted++
	}
	jobs := map[string]bool{}
	for _, ex := range due {
		if !jobs[ex.Key.Job] {
			jobs[ex.Key.Job] = true
			job := ex.Key.Job
			// On the task goroutine, which starts tasks: a new attempt of
			// the job starts either before the check (and keeps the
			// directory) or after the removal (and makes it again).
			x.onTasks(func() { x.removeTaskDirs(job) })
		}
	}
	return deleted, err
}

// removeTaskDirs deletes the task directories of a job (work and
// checkpoint directories of every replica run here) unless the node still
// keeps an execution of it. It runs on the task goroutine.
func (x *Executor) removeTaskDirs(job string) {
	if c, err := x.execs.Count("task/" + job + "/"); err != nil || c > 0 {
		return
	}
	if err := os.RemoveAll(filepath.Join(x.opts.DataDir, "tasks", job)); err != nil {
		log.Warnw("remove task directories", "job", job, "err", err)
	}
}

// Log reads an attempt's output from this node's store; attempt
// 0 means the latest attempt this node ran.
//
// allow, when set, is asked whether the caller may read a log of the
// job's owner; its error is returned.
func (x *Executor) Log(k market.TaskKey, attempt int, from uint64, maxBytes int, allow func(owner string) error) (api.LogPage, bool, error) {
	if attempt <= 0 {
		prefix := fmt.Sprintf("task/%s/%s/%d/", k.Job, k.Task, k.Replica)
		exs, err := x.execs.List(prefix)
		if err != nil {
			return api.LogPage{}, false, err
		}
		for _, e := range exs {
			attempt = max(attempt, e.Value.Attempt)
		}
		if attempt == 0 {
			return api.LogPage{}, false, nil
		}
	}
	stream := logStream(k, attempt)
	ex, ok, err := x.execs.Get(stream)
	if err != nil || !ok {
		return api.LogPage{}, false, err
	}
	if allow != nil {
		if err := allow(ex.Owner); err != nil {
			return api.LogPage{}, true, err
		}
	}
	if from == 0 {
		from = 1
	}
	if maxBytes <= 0 || maxBytes > MaxLogPage {
		maxBytes = MaxLogPage
	}
	chunks, next, err := x.store.ReadLog(stream, from, maxBytes)
	if err != nil {
		return api.LogPage{}, false, err
	}
	data, stderr, next := joinChunks(chunks, next, ex.Tagged)
	return api.LogPage{Data: string(data), Next: next, Done: !ex.Finished.IsZero(), Stderr: stderr}, true, nil
}

// joinChunks joins a page of log chunks into its output and, for tagged
// chunks, the spans of it from standard error. A page that would hold
// more than api.MaxStderrSpans spans ends before the chunk that would
// open one more, and next becomes that chunk's number.
func joinChunks(chunks []store.LogChunk, next uint64, tagged bool) ([]byte, []api.Span, uint64) {
	var data []byte
	var spans []api.Span
	for _, c := range chunks {
		d := c.Data
		if !tagged || len(d) == 0 {
			data = append(data, d...)
			continue
		}
		tag, d := d[0], d[1:]
		if tag == tagStderr && len(d) > 0 {
			if n := len(spans); n > 0 && spans[n-1].Off+spans[n-1].Len == len(data) {
				spans[n-1].Len += len(d)
			} else if n == api.MaxStderrSpans {
				return data, spans, c.Seq
			} else {
				spans = append(spans, api.Span{Off: len(data), Len: len(d)})
			}
		}
		data = append(data, d...)
	}
	return data, spans, next
}
