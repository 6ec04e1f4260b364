package api

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
)

// IDResponse is the body of GET /v1/id.
type IDResponse struct {
	PeerID string   `json:"peer_id"`
	Addrs  []string `json:"addrs"`
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
		Enforces: a.Limits.Enforces().String(), RunsUnenforced: a.Limits.Unenforced,
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
