package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/node/buildinfo"
)

// IDResponse is the body of GET /v1/id.
type IDResponse struct {
	PeerID string         `json:"peer_id"`
	Addrs  []string       `json:"addrs"`
	Build  buildinfo.Info `json:"build"`
	// Drained says an operator drained the node (agora drain) and has
	// not undrained it: it takes no work.
	Drained bool `json:"drained"`
}

// DrainResponse is the body of POST /v1/drain and /v1/undrain: the
// node's state after it, "drained" or "open".
type DrainResponse struct {
	State string `json:"state"`
}

// PeerResponse is one element of GET /v1/peers.
type PeerResponse struct {
	PeerID          string            `json:"peer_id"`
	Site            string            `json:"site"`
	Labels          map[string]string `json:"labels"`
	Capacity        resource.Vector   `json:"capacity"`
	Free            resource.Vector   `json:"free"`
	Queue           int               `json:"queue"`
	PredictedWaitMs int64             `json:"predicted_wait_ms"`
	Load            float64           `json:"load"`
	Addrs           []string          `json:"addrs"`
	LastSeen        string            `json:"last_seen"`
	// Enforces lists the task limits the peer enforces ("cpu, memory,
	// pids", "none"); RunsUnenforced, whether it runs tasks asking for
	// others anyway.
	Enforces       string `json:"enforces"`
	RunsUnenforced bool   `json:"runs_unenforced"`
	// Connection is how this node is connected to the peer: "direct",
	// "relayed" (through a relay only; see --nat-traversal) or "none"
	// (its adverts reach this node through others).
	Connection string `json:"connection"`
	// Drained says the peer's operator drained it (its advert's
	// drained): it takes no work until undrained.
	Drained bool `json:"drained"`
}

// ErrorResponse is the body of every API error.
type ErrorResponse struct {
	Error string `json:"error"`
}

// PeerView renders a membership entry in the API's peers shape.
func PeerView(m gossip.Member) PeerResponse {
	a := m.Advert
	p := PeerResponse{
		PeerID: a.Peer.String(), Site: a.Site, Labels: a.Labels, Capacity: a.Capacity, Free: a.Free,
		Queue: a.Queue, PredictedWaitMs: a.PredictedWait.Milliseconds(), Load: a.Load,
		Addrs: []string{}, LastSeen: m.LastSeen.UTC().Format(time.RFC3339),
		Enforces: a.Limits.Enforces().String(), RunsUnenforced: a.Limits.Unenforced, Drained: a.Drained,
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	for _, ad := range a.Addrs {
		p.Addrs = append(p.Addrs, ad.String())
	}
	return p
}

// JobStatus is the API's view of a job (GET /v1/jobs/{id}).
type JobStatus struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	State     string       `json:"state"`
	Reason    string       `json:"reason"`
	Manager   string       `json:"manager"`
	Owner     string       `json:"owner,omitempty"`
	Submitted string       `json:"submitted"`
	Finished  string       `json:"finished"`
	Tasks     []TaskStatus `json:"tasks"`
	// Factors are an unfinished job's priority factors (its manager's
	// view), absent in an open network.
	Factors *market.PriorityFactors `json:"factors,omitempty"`
	// Counts are, for each task of more than one replica (an array's, a
	// gang's), its replicas by state.
	Counts map[string]map[string]int `json:"counts,omitempty"`
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
	// Waiting says why an unfinished replica has not started;
	// PredictedStart, for one queued on a node, when its winning bid
	// predicted it would (RFC 3339; empty otherwise).
	Waiting        string `json:"waiting,omitempty"`
	PredictedStart string `json:"predicted_start,omitempty"`
	// Preempted counts its attempts that ended preempted — evicted by
	// higher-priority work, handed back by a drained node, superseded —
	// and placed again without counting a failure.
	Preempted int `json:"preempted"`
	// History is its attempts, oldest first.
	History []AttemptStatus `json:"history,omitempty"`
}

// AttemptStatus is one placement of a task replica.
type AttemptStatus struct {
	Attempt  int    `json:"attempt"`
	Node     string `json:"node"`
	State    string `json:"state"`
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
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
	// Stderr marks the parts of Data the task wrote to its standard
	// error; the rest is its standard output. Empty for output kept
	// before the node told the two apart.
	Stderr []Span `json:"stderr,omitempty"`
}

// Span is a byte range of a LogEntry's or LogPage's Data.
type Span struct {
	Off int `json:"off"`
	Len int `json:"len"`
}

// MaxStderrSpans bounds the spans of one page of output: a page that
// would hold more ends early (its Next says where to go on).
const MaxStderrSpans = 4096

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// StatusOf renders a job record for the API.
func StatusOf(j market.JobRecord) JobStatus {
	s := JobStatus{ID: j.ID, Name: j.Spec.Name, State: string(j.State), Reason: j.Reason, Manager: string(j.Manager), Owner: j.Owner,
		Submitted: ts(j.Submitted), Finished: ts(j.Finished), Tasks: []TaskStatus{}, Factors: j.Factors}
	for _, t := range j.Tasks {
		node := string(t.Node)
		if node == "" && len(t.History) > 0 {
			node = string(t.History[len(t.History)-1].Node)
		}
		row := TaskStatus{Name: t.Key.Task, Replica: t.Key.Replica, State: string(t.State), Node: node,
			Attempts: t.Attempts, ExitCode: t.ExitCode, Reason: t.Reason, Started: ts(t.Started), Finished: ts(t.Finished),
			Waiting: t.Waiting, PredictedStart: ts(t.PredictedStart)}
		for _, h := range t.History {
			if h.State == market.TaskPreempted {
				row.Preempted++
			}
			row.History = append(row.History, AttemptStatus{Attempt: h.Attempt, Node: string(h.Node), State: string(h.State), ExitCode: h.ExitCode,
				Reason: h.Reason, Started: ts(h.Started), Finished: ts(h.Finished)})
		}
		s.Tasks = append(s.Tasks, row)
	}
	for _, ts := range j.Spec.Tasks {
		if ts.Replicas <= 1 {
			continue
		}
		if s.Counts == nil {
			s.Counts = map[string]map[string]int{}
		}
		s.Counts[ts.Name] = map[string]int{}
	}
	for _, t := range s.Tasks {
		if c := s.Counts[t.Name]; c != nil {
			c[t.State]++
		}
	}
	return s
}

// JobRow is one job in the cluster-wide list (GET /v1/cluster/jobs,
// agora jobs --all): who owns it, where it stands and where it runs.
type JobRow struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Owner   string `json:"owner,omitempty"`
	Manager string `json:"manager"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	// Tasks counts the job's task replicas, Done those succeeded,
	// Running those awarded or running.
	Tasks   int `json:"tasks"`
	Done    int `json:"done"`
	Running int `json:"running"`
	// Nodes are the nodes its replicas run on now or, once they ended,
	// last ran on; at most MaxRowNodes, sorted.
	Nodes     []string `json:"nodes"`
	Submitted string   `json:"submitted"`
	Started   string   `json:"started,omitempty"` // its first replica's start
	Finished  string   `json:"finished,omitempty"`
	// Waiting is why its first replica not yet started waits (TaskStatus.Waiting).
	Waiting string `json:"waiting,omitempty"`
	// Factors are an unfinished job's priority factors (JobStatus.Factors).
	Factors *market.PriorityFactors `json:"factors,omitempty"`
}

// MaxRowNodes bounds the nodes a JobRow names.
const MaxRowNodes = 16

// RowOf is j's row in the cluster-wide list. A summary record (a caller
// who may not see the job's detail) gives a row without tasks or nodes.
func RowOf(j market.JobRecord) JobRow {
	r := JobRow{ID: j.ID, Name: j.Spec.Name, Owner: j.Owner, Manager: string(j.Manager), State: string(j.State), Reason: j.Reason,
		Tasks: len(j.Tasks), Submitted: ts(j.Submitted), Finished: ts(j.Finished), Nodes: []string{}, Factors: j.Factors}
	var started time.Time
	nodes := map[string]bool{}
	for _, t := range j.Tasks {
		switch t.State {
		case market.TaskSucceeded:
			r.Done++
		case market.TaskAwarded, market.TaskRunning:
			r.Running++
		}
		node := t.Node
		if node == "" && len(t.History) > 0 {
			node = t.History[len(t.History)-1].Node
		}
		if node != "" {
			nodes[string(node)] = true
		}
		for _, h := range t.History {
			if !h.Started.IsZero() && (started.IsZero() || h.Started.Before(started)) {
				started = h.Started
			}
		}
		if r.Waiting == "" && t.Waiting != "" {
			r.Waiting = t.Key.Task + ": " + t.Waiting
		}
	}
	for n := range nodes {
		r.Nodes = append(r.Nodes, n)
	}
	sort.Strings(r.Nodes)
	if len(r.Nodes) > MaxRowNodes {
		r.Nodes = r.Nodes[:MaxRowNodes]
	}
	r.Started = ts(started)
	return r
}

// ClusterJobs is the body of GET /v1/cluster/jobs.
type ClusterJobs struct {
	// Jobs are the jobs of every node that answered, oldest first.
	Jobs []JobRow `json:"jobs"`
	// Unreachable lists the peers that did not answer in time, and
	// Truncated those that had more jobs than one answer holds: their
	// jobs are missing or partly missing.
	Unreachable []string `json:"unreachable,omitempty"`
	Truncated   []string `json:"truncated,omitempty"`
}

// rowFilter selects rows of the cluster-wide list.
type rowFilter struct {
	states map[string]bool
	user   string
	node   string
}

// parseRowFilter reads the filters of GET /v1/cluster/jobs.
func parseRowFilter(states, user, node string) (rowFilter, error) {
	f := rowFilter{user: user, node: node}
	if states != "" {
		f.states = map[string]bool{}
		for _, s := range strings.Split(states, ",") {
			if !slices.Contains(market.JobStates, market.JobState(s)) {
				return f, fmt.Errorf("unknown state %q (want one of %v)", s, market.JobStates)
			}
			f.states[s] = true
		}
	}
	return f, nil
}

// match reports whether row j passes the filter.
func (f rowFilter) match(j JobRow) bool {
	if f.states != nil && !f.states[j.State] {
		return false
	}
	if f.user != "" && j.Owner != f.user {
		return false
	}
	if f.node != "" && !slices.ContainsFunc(j.Nodes, func(n string) bool { return n == f.node || strings.HasSuffix(n, f.node) }) {
		return false
	}
	return true
}

// rowsAnswer is the body of the reply to a jobs query.
type rowsAnswer struct {
	Jobs      []JobRow `json:"jobs"`
	Truncated bool     `json:"truncated,omitempty"`
}

// RowsAnswer is the body of a node's reply to a jobs query: the rows of
// jobs, newest first while their JSON fits limit bytes.
func RowsAnswer(jobs []market.JobRecord, limit int) []byte {
	a := rowsAnswer{Jobs: []JobRow{}}
	size := 64
	for i := len(jobs) - 1; i >= 0; i-- {
		row := RowOf(jobs[i])
		b, _ := json.Marshal(row)
		if size+len(b)+1 > limit {
			a.Truncated = true
			break
		}
		size += len(b) + 1
		a.Jobs = append(a.Jobs, row)
	}
	body, _ := json.Marshal(a)
	return body
}

// MergeRows builds the cluster-wide list from this node's jobs and its
// peers' answers to a jobs query (by peer ID); unreachable names the
// peers that gave none. A peer's answer counts for the jobs it manages
// only, and a job listed twice (two managers after a cut) once.
func MergeRows(mine []market.JobRecord, answers map[string][]byte, unreachable []string) ClusterJobs {
	out := ClusterJobs{Jobs: []JobRow{}, Unreachable: append([]string(nil), unreachable...)}
	seen := map[string]bool{}
	add := func(r JobRow) {
		if !seen[r.ID] {
			seen[r.ID] = true
			out.Jobs = append(out.Jobs, r)
		}
	}
	for _, j := range mine {
		add(RowOf(j))
	}
	peers := make([]string, 0, len(answers))
	for p := range answers {
		peers = append(peers, p)
	}
	sort.Strings(peers)
	for _, p := range peers {
		var a rowsAnswer
		if err := json.Unmarshal(answers[p], &a); err != nil {
			out.Unreachable = append(out.Unreachable, p)
			continue
		}
		if a.Truncated {
			out.Truncated = append(out.Truncated, p)
		}
		for _, r := range a.Jobs {
			if r.Manager == p {
				add(r)
			}
		}
	}
	sort.Strings(out.Unreachable)
	sort.SliceStable(out.Jobs, func(i, j int) bool {
		a, _ := time.Parse(time.RFC3339Nano, out.Jobs[i].Submitted)
		b, _ := time.Parse(time.RFC3339Nano, out.Jobs[j].Submitted)
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out.Jobs[i].ID < out.Jobs[j].ID
	})
	return out
}

// Ago renders t relative to now as people read it: "21s ago", "3m ago",
// "2h ago", "4d ago"; "-" for the zero time, "just now" for one ahead.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// AcctAnswer is GET /v1/acct's answer: the attempts the filter selects,
// joined from the accounting records of this node and every peer that
// answered (market/acct).
type AcctAnswer struct {
	Attempts []acct.Attempt `json:"attempts"`
	// Unreachable lists the peers that did not answer: their records
	// are missing unless copies were kept elsewhere.
	Unreachable []string `json:"unreachable,omitempty"`
}

// ReportAnswer is GET /v1/report's answer.
type ReportAnswer struct {
	acct.Report
	Unreachable []string `json:"unreachable,omitempty"`
}
