package acct

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/agora-sched/agora/market"
)

// Attempt is one row of `agora acct`: an attempt, joined from its usage
// and schedule records. The names follow Slurm's sacct where one fits.
type Attempt struct {
	Job      string        `json:"job"`
	Name     string        `json:"name,omitempty"`
	Task     string        `json:"task"`
	Replica  int           `json:"replica"`
	Attempt  int           `json:"attempt"`
	Epoch    uint64        `json:"epoch"`
	User     string        `json:"user,omitempty"`
	Site     string        `json:"site,omitempty"`
	Node     market.NodeID `json:"node"`
	Manager  market.NodeID `json:"manager,omitempty"`
	Type     string        `json:"type,omitempty"`
	Image    bool          `json:"image,omitempty"`
	State    string        `json:"state"`
	ExitCode int           `json:"exit_code"`
	Reason   string        `json:"reason,omitempty"`

	Submit   time.Time `json:"submit,omitzero"`
	Eligible time.Time `json:"eligible,omitzero"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end"`

	// Elapsed and Wait are in seconds; Wait is -1 when no schedule
	// record says when the attempt became ready.
	Elapsed float64 `json:"elapsed"`
	Wait    float64 `json:"wait"`

	AllocCPUs  float64 `json:"alloc_cpus"`
	ReqMem     int64   `json:"req_mem,omitempty"`
	AllocGPUs  int     `json:"alloc_gpus,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds"` // measured (TotalCPU); 0 when not measured
	MaxRSS     int64   `json:"max_rss,omitempty"`
	GPUSeconds float64 `json:"gpu_seconds,omitempty"`
	Source     string  `json:"source,omitempty"`
	// Attested says which records the row joins: "executor", "manager"
	// or "both".
	Attested string `json:"attested"`
}

// Join turns records (from any nodes, duplicates allowed) into rows, one
// per attempt, ordered by end time, then job, task, replica and epoch.
func Join(recs []Record) []Attempt {
	type pair struct{ usage, sched *Record }
	by := map[string]*pair{}
	for i := range recs {
		r := &recs[i]
		p := by[r.AttemptID()]
		if p == nil {
			p = &pair{}
			by[r.AttemptID()] = p
		}
		if r.Kind == KindUsage {
			p.usage = r
		} else {
			p.sched = r
		}
	}
	out := make([]Attempt, 0, len(by))
	for _, p := range by {
		out = append(out, joined(p.usage, p.sched))
	}
	slices.SortFunc(out, func(a, b Attempt) int {
		return cmp.Or(a.End.Compare(b.End), cmp.Compare(a.Job, b.Job), cmp.Compare(a.Task, b.Task),
			cmp.Compare(a.Replica, b.Replica), cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Node, b.Node))
	})
	return out
}

// joined is one attempt's row from its usage record u and schedule
// record s, either of which may be nil. What the executor measured
// (start, end, exit) comes from u; what the manager decided (the state
// an attempt ended in, when it was ready) from s.
func joined(u, s *Record) Attempt {
	base := u
	if base == nil {
		base = s
	}
	a := Attempt{Job: base.Job, Task: base.Task, Replica: base.Replica, Attempt: base.Attempt, Epoch: base.Epoch,
		User: base.Owner, Node: base.Node, Type: base.Type, Image: base.Image, State: base.State, ExitCode: base.ExitCode,
		Reason: base.Reason, Start: base.Started, End: base.Finished, AllocCPUs: float64(base.CPUMilli) / 1000,
		ReqMem: base.Memory, AllocGPUs: base.GPUs, Wait: -1}
	switch {
	case u != nil && s != nil:
		a.Attested = "both"
	case u != nil:
		a.Attested = "executor"
	default:
		a.Attested = "manager"
	}
	if u != nil {
		a.Site, a.CPUSeconds, a.MaxRSS, a.GPUSeconds, a.Source = u.Site, u.CPUSeconds, u.MemPeak, u.GPUSeconds, u.Source
	}
	if s != nil {
		a.Name, a.Manager, a.Submit, a.Eligible = s.Name, s.Signer, s.Submitted, s.Ready
		a.State = s.State
		if a.User == "" {
			a.User = s.Owner
		}
		if a.Type == "" {
			a.Type = s.Type
		}
		if a.Start.IsZero() {
			a.Start = s.Started
		}
		if u == nil && s.Reason != "" {
			a.Reason = s.Reason
		}
	}
	if !a.Start.IsZero() {
		a.Elapsed = a.End.Sub(a.Start).Seconds()
		if !a.Eligible.IsZero() {
			a.Wait = max(0, a.Start.Sub(a.Eligible).Seconds())
		}
	}
	if a.GPUSeconds == 0 && a.AllocGPUs > 0 && a.Elapsed > 0 {
		a.GPUSeconds = float64(a.AllocGPUs) * a.Elapsed
	}
	return a
}

// Filter selects rows: an empty field selects all. Node matches a node
// ID or its prefix (as the CLI shortens them); Since and Until bound the
// end time, [Since, Until).
type Filter struct {
	Job   string    `json:"job,omitempty"`
	User  string    `json:"user,omitempty"`
	Site  string    `json:"site,omitempty"`
	Node  string    `json:"node,omitempty"`
	State string    `json:"state,omitempty"`
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Match reports whether row a passes f.
func (f Filter) Match(a *Attempt) bool {
	return (f.Job == "" || a.Job == f.Job) && (f.User == "" || a.User == f.User) &&
		(f.Site == "" || a.Site == f.Site) && (f.Node == "" || strings.HasPrefix(string(a.Node), f.Node)) &&
		(f.State == "" || a.State == f.State) && f.inRange(a.End)
}

// MatchRecord reports whether record r could make a row f passes: what a
// node answering a query filters before it sends (the job, the time
// range; the rest needs the join).
func (f Filter) MatchRecord(r *Record) bool {
	return (f.Job == "" || r.Job == f.Job) && f.inRange(r.Finished)
}

func (f Filter) inRange(t time.Time) bool {
	return (f.Since.IsZero() || !t.Before(f.Since)) && (f.Until.IsZero() || t.Before(f.Until))
}

// Select is the rows of recs that f passes.
func Select(recs []Record, f Filter) []Attempt {
	rows := Join(recs)
	out := rows[:0]
	for i := range rows {
		if f.Match(&rows[i]) {
			out = append(out, rows[i])
		}
	}
	return out
}
