package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire"
)

// JobStatus is the API's view of a job (GET /v1/jobs/{id}).
type JobStatus struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	State     string       `json:"state"`
	Reason    string       `json:"reason"`
	Manager   string       `json:"manager"`
	Submitted string       `json:"submitted"`
	Finished  string       `json:"finished"`
	Tasks     []TaskStatus `json:"tasks"`
}

// TaskStatus is one task replica in a JobStatus.
type TaskStatus struct {
	Name     string `json:"name"`
	Replica  int    `json:"replica"`
	State    string `json:"state"`
	Node     string `json:"node"`
	Attempts int    `json:"attempts"`
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason"`
	Started  string `json:"started"`
	Finished string `json:"finished"`
}

// LogsResponse is the body of GET /v1/jobs/{id}/logs.
type LogsResponse struct {
	ID    string     `json:"id"`
	State string     `json:"state"`
	Logs  []LogEntry `json:"logs"`
}

// LogEntry is the output of one task replica's latest attempt.
type LogEntry struct {
	Task    string `json:"task"`
	Replica int    `json:"replica"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node"`
	Data    string `json:"data"`
	Next    uint64 `json:"next"`
}

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// StatusOf renders a job record for the API.
func StatusOf(j market.JobRecord) JobStatus {
	s := JobStatus{ID: j.ID, Name: j.Spec.Name, State: string(j.State), Reason: j.Reason, Manager: string(j.Manager),
		Submitted: ts(j.Submitted), Finished: ts(j.Finished), Tasks: []TaskStatus{}}
	for _, t := range j.Tasks {
		node := string(t.Node)
		if node == "" && len(t.History) > 0 {
			node = string(t.History[len(t.History)-1].Node)
		}
		s.Tasks = append(s.Tasks, TaskStatus{Name: t.Key.Task, Replica: t.Key.Replica, State: string(t.State), Node: node,
			Attempts: t.Attempts, ExitCode: t.ExitCode, Reason: t.Reason, Started: ts(t.Started), Finished: ts(t.Finished)})
	}
	return s
}

func (n *Node) registerJobAPI(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/jobs", n.handleSubmit)
	mux.HandleFunc("GET /v1/jobs", n.handleJobs)
	mux.HandleFunc("GET /v1/jobs/{id}", n.handleJob)
	mux.HandleFunc("GET /v1/jobs/{id}/logs", n.handleLogs)
	mux.HandleFunc("DELETE /v1/jobs/{id}", n.handleCancel)
}

func newJobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "j-" + hex.EncodeToString(b[:])
}

func (n *Node) handleSubmit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, spec.MaxSpecBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	js, err := spec.Parse(body, time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id := newJobID()
	copied := n.copied.wait(id)
	var serr error
	if err := n.call(func() { serr = n.mkt.Submit(time.Now(), id, *js) }); err != nil {
		n.copied.forget(id)
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if serr != nil {
		n.copied.forget(id)
		writeError(w, http.StatusBadRequest, serr.Error())
		return
	}
	// The market copies a new job's record to its replica peers at once:
	// answer once they have it, so that the job survives this node from
	// the moment its submitter hears it was accepted.
	var copying bool
	if n.call(func() { copying = n.mkt.Copying(id) }) == nil && copying {
		select {
		case <-copied:
		case <-time.After(2 * n.mkt.Config().QueryTimeout):
		case <-r.Context().Done():
		}
	}
	n.copied.forget(id)
	n.met.submitted.Inc()
	log.Infow("job submitted", "job", id, "name", js.Name, "tasks", len(js.Tasks))
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

func (n *Node) handleJobs(w http.ResponseWriter, _ *http.Request) {
	var jobs, held []market.JobRecord
	if err := n.call(func() { jobs, held = n.mkt.Jobs(), n.mkt.Held() }); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := []JobStatus{}
	for _, j := range jobs {
		out = append(out, StatusOf(j))
	}
	for _, j := range held { // being restored after a restart
		out = append(out, StatusOf(j))
	}
	writeJSON(w, http.StatusOK, out)
}

func (n *Node) handleJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := n.findJob(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusNotFound, "no job "+id)
		return
	}
	writeJSON(w, http.StatusOK, StatusOf(j))
}

func (n *Node) handleCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	found, err := n.cancelLocal(id)
	if !found {
		rep, _, ferr := n.fanout(r.Context(), wire.Query{Kind: "cancel", Job: id})
		if ferr != nil {
			writeError(w, http.StatusNotFound, "no job "+id)
			return
		}
		if rep.Error != "" {
			err = errors.New(rep.Error)
		}
	}
	if err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": string(market.JobCancelled)})
}

func (n *Node) handleLogs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	task := q.Get("task")
	replica, from := -1, uint64(0)
	if v := q.Get("replica"); v != "" {
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 {
			writeError(w, http.StatusBadRequest, "invalid replica "+strconv.Quote(v))
			return
		}
		replica = x
	}
	if v := q.Get("from"); v != "" {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid from "+strconv.Quote(v))
			return
		}
		from = x
	}
	j, err := n.findJob(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusNotFound, "no job "+id)
		return
	}
	resp := LogsResponse{ID: id, State: string(j.State), Logs: []LogEntry{}}
	matched := false
	for _, t := range j.Tasks {
		if (task != "" && t.Key.Task != task) || (replica >= 0 && t.Key.Replica != replica) {
			continue
		}
		matched = true
		if len(t.History) == 0 {
			continue
		}
		h := t.History[len(t.History)-1]
		if h.Started.IsZero() && len(t.History) > 1 && h.State == market.TaskAwarded {
			h = t.History[len(t.History)-2] // still queued: show the last attempt that ran
		}
		e := LogEntry{Task: t.Key.Task, Replica: t.Key.Replica, Attempt: h.Attempt, Node: string(h.Node), Next: max(from, 1)}
		lr, ok, err := n.taskLog(r.Context(), h.Node, t.Key, h.Attempt, from)
		if err != nil {
			log.Debugw("read logs", "task", t.Key, "node", h.Node, "err", err)
		}
		if ok {
			e.Data, e.Next = lr.Data, lr.Next
		}
		resp.Logs = append(resp.Logs, e)
	}
	if task != "" && !matched {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s has no task %q", id, task))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// taskLog reads an attempt's output from whichever node ran it.
func (n *Node) taskLog(ctx context.Context, node market.NodeID, k market.TaskKey, attempt int, from uint64) (logsReply, bool, error) {
	if node == market.NodeID(n.ID().String()) {
		return n.readLocalLog(k, attempt, from, maxLogReplyBytes)
	}
	p, err := peer.Decode(string(node))
	if err != nil {
		return logsReply{}, false, err
	}
	rep, err := n.ask(ctx, p, wire.Query{Kind: "logs", Job: k.Job, Task: k.Task, Replica: int32(k.Replica), Attempt: int32(attempt), From: from, MaxBytes: maxLogReplyBytes})
	if err != nil {
		return logsReply{}, false, err
	}
	if !rep.Found {
		return logsReply{}, false, nil
	}
	var lr logsReply
	if err := json.Unmarshal(rep.Body, &lr); err != nil {
		return logsReply{}, false, err
	}
	return lr, true, nil
}

// Events returns the lines of a job's event log kept on this node.
func (n *Node) Events(job string) []string {
	n.syncEvents()
	var out []string
	from := uint64(1)
	for {
		chunks, next, err := n.store.ReadLog(eventsStream(job), from, 0)
		if err != nil || len(chunks) == 0 {
			return out
		}
		for _, c := range chunks {
			out = append(out, strings.TrimRight(string(c.Data), "\n"))
		}
		from = next
	}
}

// JobRecord returns the full record of a job this node manages.
func (n *Node) JobRecord(id string) (market.JobRecord, bool) { return n.localJob(id) }

// ReplicaRecord returns the copy of a job record this node holds for the
// job's manager, if it holds one.
func (n *Node) ReplicaRecord(id string) (market.JobRecord, bool) {
	r, ok, err := n.copies.Get(id)
	if err != nil || !ok {
		return market.JobRecord{}, false
	}
	return r.Record, true
}
