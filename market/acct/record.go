package acct

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agora-sched/agora/market"
)

// Record kinds.
const (
	// KindUsage is the executor's record of an attempt it ran.
	KindUsage = "usage"
	// KindSchedule is the manager's record of an attempt it placed.
	KindSchedule = "schedule"
)

// Usage sources: where a usage record's CPU-seconds and memory peak
// come from.
const (
	SourceCgroup = "cgroup" // the attempt's own cgroup (cpuacct / cpu.stat, memory peak)
	SourceRusage = "rusage" // the process's rusage at exit, its waited children included
	SourceNone   = ""       // not measured (a container's engine, an attempt that ended while the node was down)
)

// Record is what one node attests of one attempt of a task replica.
// Fields a kind does not know are zero.
type Record struct {
	Kind    string        `json:"kind"`
	Job     string        `json:"job"`
	Task    string        `json:"task"`
	Replica int           `json:"replica"`
	Epoch   uint64        `json:"epoch"`
	Attempt int           `json:"attempt"`
	Node    market.NodeID `json:"node"`   // the executor
	Signer  market.NodeID `json:"signer"` // the executor (usage) or the manager (schedule)
	Owner   string        `json:"owner,omitempty"`
	Site    string        `json:"site,omitempty"` // the executor's site (usage)
	Type    string        `json:"type,omitempty"` // the job type (prediction class)
	Name    string        `json:"name,omitempty"` // the job's name (schedule)
	Image   bool          `json:"image,omitempty"`
	// CPUMilli, Memory and GPUs are what the attempt was given.
	CPUMilli int64 `json:"cpu_milli"`
	Memory   int64 `json:"memory,omitempty"`
	GPUs     int   `json:"gpus,omitempty"`

	Submitted time.Time `json:"submitted,omitzero"` // schedule: the job's submission
	Ready     time.Time `json:"ready,omitzero"`     // schedule: when this attempt became ready to place
	Awarded   time.Time `json:"awarded,omitzero"`   // schedule
	Started   time.Time `json:"started,omitzero"`   // when it started running (zero: never)
	Finished  time.Time `json:"finished"`           // when it ended

	State    string `json:"state"` // succeeded, failed, cancelled, preempted
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`

	// CPUSeconds and MemPeak are the attempt's measured use (usage,
	// Source not empty); GPUSeconds is its GPUs times its wall time.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	MemPeak    int64   `json:"mem_peak,omitempty"`
	GPUSeconds float64 `json:"gpu_seconds,omitempty"`
	Source     string  `json:"source,omitempty"`

	Sig []byte `json:"sig,omitempty"`
}

// Limits of a record's fields.
const (
	MaxText   = 256  // job, task, owner, site, type, name, node IDs
	MaxReason = 1024 // reason
	// MaxRecordBytes bounds one encoded record.
	MaxRecordBytes = 8 << 10
)

// ID names the record: its attempt and its kind. A node keeps one
// record per ID; the same attempt has one of each kind.
func (r *Record) ID() string {
	return fmt.Sprintf("%s/%s/%d/%d/%s/%s", r.Job, r.Task, r.Replica, r.Epoch, r.Node, r.Kind)
}

// AttemptID names the attempt both kinds of record describe.
func (r *Record) AttemptID() string {
	return fmt.Sprintf("%s/%s/%d/%d/%s", r.Job, r.Task, r.Replica, r.Epoch, r.Node)
}

// SignedBytes is what Sig signs: the record's JSON without Sig, prefixed
// by a domain tag so no other signed statement of a node reads as one.
func (r *Record) SignedBytes() []byte {
	c := *r
	c.Sig = nil
	b, err := json.Marshal(&c)
	if err != nil {
		panic(err) // a Record always encodes
	}
	return append([]byte("agora-acct-v1\n"), b...)
}

// Sign fills in Sig with p, the signer's prover.
func (r *Record) Sign(p market.Prover) { r.Sig = p.Sign(r.SignedBytes()) }

// Check reports the first field of r that is out of its limits or
// inconsistent, naming it.
func (r *Record) Check() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("accounting record: %s: %s", field, fmt.Sprintf(format, a...))
	}
	switch r.Kind {
	case KindUsage:
		if r.Signer != r.Node {
			return bad("signer", "%s, a usage record is signed by its executor %s", short(string(r.Signer)), short(string(r.Node)))
		}
	case KindSchedule:
		if r.Source != SourceNone || r.CPUSeconds != 0 || r.MemPeak != 0 {
			return bad("source", "a schedule record carries no measured use")
		}
	default:
		return bad("kind", "%q (want %q or %q)", short(r.Kind), KindUsage, KindSchedule)
	}
	for _, f := range []struct {
		name, v string
		max     int
		need    bool
	}{
		{"job", r.Job, MaxText, true}, {"task", r.Task, MaxText, true},
		{"node", string(r.Node), MaxText, true}, {"signer", string(r.Signer), MaxText, true},
		{"owner", r.Owner, MaxText, false}, {"site", r.Site, MaxText, false},
		{"type", r.Type, MaxText, false}, {"name", r.Name, MaxText, false},
		{"state", r.State, MaxText, true}, {"reason", r.Reason, MaxReason, false},
	} {
		switch {
		case f.need && f.v == "":
			return bad(f.name, "required")
		case len(f.v) > f.max:
			return bad(f.name, "%d bytes, over the limit of %d", len(f.v), f.max)
		case !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) || f.name != "reason" && strings.ContainsRune(f.v, '\n'):
			return bad(f.name, "not one line of UTF-8 text")
		}
	}
	if strings.Contains(r.Job+r.Task, "/") {
		return bad("job", "job and task names hold no '/'")
	}
	switch market.TaskState(r.State) {
	case market.TaskSucceeded, market.TaskFailed, market.TaskCancelled, market.TaskPreempted:
	default:
		return bad("state", "%q is not how an attempt ends", short(r.State))
	}
	switch r.Source {
	case SourceCgroup, SourceRusage, SourceNone:
	default:
		return bad("source", "%q (want %q, %q or empty)", short(r.Source), SourceCgroup, SourceRusage)
	}
	switch {
	case r.Replica < 0 || r.Replica > 1<<20:
		return bad("replica", "%d out of range", r.Replica)
	case r.Attempt < 0 || r.Attempt > 1<<30:
		return bad("attempt", "%d out of range", r.Attempt)
	case r.CPUMilli < 0 || r.Memory < 0 || r.GPUs < 0 || r.GPUs > 1<<16 || r.MemPeak < 0:
		return bad("request", "negative or absurd resources")
	case !finite(r.CPUSeconds) || !finite(r.GPUSeconds) || r.CPUSeconds < 0 || r.GPUSeconds < 0:
		return bad("cpu_seconds", "not a finite non-negative number")
	case r.Finished.IsZero():
		return bad("finished", "required")
	case !r.Started.IsZero() && r.Started.After(r.Finished):
		return bad("started", "after finished")
	}
	if !r.Started.IsZero() {
		wall := r.Finished.Sub(r.Started).Seconds()
		// CPU time over wall time is bounded by the CPUs a node can
		// have; GPU time by the GPUs it was given.
		if r.GPUSeconds > wall*float64(r.GPUs)+1 {
			return bad("gpu_seconds", "%.0f s, more than its %d GPUs over %.0f s", r.GPUSeconds, r.GPUs, wall)
		}
	} else if r.CPUSeconds > 0 || r.GPUSeconds > 0 {
		return bad("cpu_seconds", "use measured for an attempt that never started")
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func short(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return s
}

// Errors of Accept.
var (
	ErrNotSigner = errors.New("not sent by the node that signs it")
	ErrBadSig    = errors.New("bad signature")
	ErrStale     = errors.New("outside the accounting retention")
)

// Accept decides whether a node keeps record r that peer from pushed to
// it at now: a well-formed record, sent by the node that signed it (a
// node attests only what it saw itself; it does not relay others'),
// whose signature checks against that node's key, that ended within
// retention and not in the future (give or take skew).
func Accept(r *Record, from market.NodeID, now time.Time, retention, skew time.Duration, p market.Prover) error {
	if err := r.Check(); err != nil {
		return err
	}
	if r.Signer != from {
		return fmt.Errorf("accounting record %s: %w (signer %s, from %s)", r.ID(), ErrNotSigner, r.Signer, from)
	}
	if r.Finished.After(now.Add(skew)) || r.Finished.Before(now.Add(-retention)) {
		return fmt.Errorf("accounting record %s: ended %s: %w", r.ID(), r.Finished.UTC().Format(time.RFC3339), ErrStale)
	}
	if len(r.Sig) == 0 || !p.Verify(r.Signer, r.SignedBytes(), r.Sig) {
		return fmt.Errorf("accounting record %s: %w", r.ID(), ErrBadSig)
	}
	return nil
}
