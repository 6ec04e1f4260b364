package market

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// JobState is a job's lifecycle state.
type JobState string

// Job states.
const (
	JobPending   JobState = "pending"
	JobRunning   JobState = "running"
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// JobStates lists every job state, in lifecycle order.
var JobStates = []JobState{JobPending, JobRunning, JobSucceeded, JobFailed, JobCancelled}

// Terminal reports whether the job can change no more.
func (s JobState) Terminal() bool {
	return s == JobSucceeded || s == JobFailed || s == JobCancelled
}

// TaskState is a task replica's lifecycle state.
type TaskState string

// Task states. Preempted is only reported by executors; the manager turns
// it back into Pending.
const (
	TaskWaiting   TaskState = "waiting" // dependencies not done
	TaskPending   TaskState = "pending" // ready, not yet placed (auctioning or backing off)
	TaskAwarded   TaskState = "awarded" // accepted by an executor, queued there
	TaskRunning   TaskState = "running"
	TaskSucceeded TaskState = "succeeded"
	TaskFailed    TaskState = "failed"
	TaskCancelled TaskState = "cancelled"
	TaskPreempted TaskState = "preempted"
)

// Terminal reports whether the task replica can change no more.
func (s TaskState) Terminal() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskCancelled
}

// AttemptRecord is one placement of a task replica.
type AttemptRecord struct {
	Attempt  int       `json:"attempt"`
	Epoch    uint64    `json:"epoch"`
	Node     NodeID    `json:"node"`
	State    TaskState `json:"state"`
	ExitCode int       `json:"exit_code"`
	Reason   string    `json:"reason,omitempty"`
	Awarded  time.Time `json:"awarded"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
}

// TaskRecord is the manager's record of one task replica.
type TaskRecord struct {
	Key       TaskKey   `json:"key"`
	State     TaskState `json:"state"`
	Node      NodeID    `json:"node,omitempty"`
	Epoch     uint64    `json:"epoch"`
	Attempts  int       `json:"attempts"`
	Failures  int       `json:"failures"`
	ExitCode  int       `json:"exit_code"`
	Reason    string    `json:"reason,omitempty"`
	Ready     time.Time `json:"ready,omitzero"`      // when it became ready to place
	NotBefore time.Time `json:"not_before,omitzero"` // retry back-off
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
	// LeaseUntil is when the executor's lease on an awarded or running
	// replica lapses unless renewed by a report.
	LeaseUntil time.Time       `json:"lease_until,omitzero"`
	History    []AttemptRecord `json:"history,omitempty"`
	// Outputs are the outputs of the attempt that succeeded, for a task
	// that declares outputs.
	Outputs *DataRef `json:"outputs,omitempty"`
	// Proof is the executor's proof (TaskStatus.Proof) from its latest
	// report of the current attempt, held or succeeded: what this
	// node shows for the replica in a ManagerClaim.
	Proof []byte `json:"proof,omitempty"`
	// Waiting says why an unfinished replica has not started, and
	// PredictedStart, for one awarded and queued, when its winning bid
	// predicted it would. Both are worked out by Market.Job for the copy
	// it returns (waiting.go), never stored or copied to peers.
	Waiting        string    `json:"waiting,omitempty" pb:"-"`
	PredictedStart time.Time `json:"predicted_start,omitzero" pb:"-"`
}

// JobRecord is the manager's durable record of a job.
type JobRecord struct {
	ID      string   `json:"id"`
	Spec    spec.Job `json:"spec"`
	Manager NodeID   `json:"manager"`
	// Origin is the job's first manager, the node it was submitted to:
	// it may always claim the job back after a cut (split.go).
	Origin NodeID `json:"origin,omitempty"`
	// EpochTag marks the epochs of the manager that took the job over
	// last (epochs.go); zero while its first manager has it.
	EpochTag  uint32       `json:"epoch_tag,omitempty"`
	Submitted time.Time    `json:"submitted"`
	State     JobState     `json:"state"`
	Reason    string       `json:"reason,omitempty"`
	Finished  time.Time    `json:"finished,omitzero"`
	Tasks     []TaskRecord `json:"tasks"`
	// Owner is the user who submitted the job and Ticket the submission
	// they signed (market/auth), in a network with an authority; both
	// empty otherwise.
	Owner  string `json:"owner,omitempty"`
	Ticket []byte `json:"ticket,omitempty"`
	// Factors are an unfinished job's priority factors as its manager
	// sees them now (docs/scheduling.md, "Fair share"): worked out by
	// Market.Job for the copy it returns, never stored or copied.
	Factors *PriorityFactors `json:"factors,omitempty" pb:"-"`
	// specSigned says that Spec was decoded from the very bytes Ticket
	// signs (AttachTicket put a ticket stored without them back), so the
	// two cannot differ; CheckReplica then need not compare them.
	specSigned bool
}

// DetachTicket is what a record's stored form keeps of its spec and
// ticket: the spec's JSON, and the ticket without those bytes when it
// signs exactly them (detached), else whole. The ticket signs the spec's
// canonical form, so a record of a signed job stores the spec once.
func DetachTicket(j JobRecord) (specJSON, ticket []byte, detached bool, err error) {
	specJSON, err = json.Marshal(j.Spec)
	if err != nil {
		return nil, nil, false, fmt.Errorf("job record %s: encode spec: %w", j.ID, err)
	}
	if len(j.Ticket) > 0 {
		if t, sp, err := auth.DetachSpec(j.Ticket); err == nil && bytes.Equal(sp, specJSON) {
			return specJSON, t, true, nil
		}
	}
	return specJSON, j.Ticket, false, nil
}

// AttachTicket sets j's spec and ticket from what DetachTicket gave. A
// detached ticket gets the spec's very bytes back, so the two cannot
// differ and the record need not be checked against its ticket again.
func (j *JobRecord) AttachTicket(specJSON, ticket []byte, detached bool) error {
	var js spec.Job
	if err := json.Unmarshal(specJSON, &js); err != nil {
		return fmt.Errorf("job record %s: spec: %w", j.ID, err)
	}
	j.Spec, j.Ticket, j.specSigned = js, nil, false
	switch {
	case detached:
		full, err := auth.AttachSpec(ticket, specJSON)
		if err != nil {
			return fmt.Errorf("job record %s: ticket: %w", j.ID, err)
		}
		j.Ticket, j.specSigned = full, true
	case len(ticket) > 0:
		j.Ticket = ticket
	}
	return nil
}

// Clone returns a deep copy, safe to hand to another goroutine.
func (j *JobRecord) Clone() JobRecord {
	c := *j
	c.Tasks = make([]TaskRecord, len(j.Tasks))
	for i, t := range j.Tasks {
		c.Tasks[i] = t
		c.Tasks[i].History = append([]AttemptRecord(nil), t.History...)
	}
	return c
}

// Summary is what anyone may see of a job in a network with an
// authority: its name, owner, manager, state and times; not its tasks,
// spec, reasons or ticket.
func (j *JobRecord) Summary() JobRecord {
	return JobRecord{ID: j.ID, Spec: spec.Job{Name: j.Spec.Name}, Manager: j.Manager, Submitted: j.Submitted,
		State: j.State, Finished: j.Finished, Owner: j.Owner}
}

// isGang reports whether the job's task of that name is a gang: replicas
// that start together, all or none.
func (j *JobRecord) isGang(task string) bool {
	ts, ok := j.Spec.Task(task)
	return ok && ts.Gang && ts.Replicas > 1
}

// task returns the record of a replica.
func (j *JobRecord) task(k TaskKey) *TaskRecord {
	for i := range j.Tasks {
		if j.Tasks[i].Key == k {
			return &j.Tasks[i]
		}
	}
	return nil
}

// newJobRecord builds the record of a freshly submitted job: one task
// record per replica, those without dependencies ready at once.
func newJobRecord(id string, js spec.Job, manager NodeID, now time.Time) JobRecord {
	j := JobRecord{ID: id, Spec: js, Manager: manager, Origin: manager, Submitted: now, State: JobPending}
	for _, t := range js.Tasks {
		n := max(t.Replicas, 1)
		for r := 0; r < n; r++ {
			tr := TaskRecord{Key: TaskKey{Job: id, Task: t.Name, Replica: r}, State: TaskWaiting}
			if len(t.After) == 0 {
				tr.State, tr.Ready = TaskPending, now
			}
			j.Tasks = append(j.Tasks, tr)
		}
	}
	return j
}
