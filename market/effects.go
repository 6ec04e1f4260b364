package market

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// Effect is something the caller must do on the market's behalf.
type Effect interface{ effect() }

// Send delivers Msg to one node.
type Send struct {
	To  NodeID
	Msg Msg
}

// Broadcast delivers Msg (a CFP) to every peer, e.g. on the jobs topic.
type Broadcast struct{ Msg Msg }

// StartTask starts a task replica on this node with the given GPUs.
type StartTask struct {
	Task  TaskSpec
	Alloc resource.Allocation
	// Manager is the node the task reports to: what the caller keeps
	// with a running attempt, to hand back through Resume after a
	// restart.
	Manager NodeID
}

// StopTask stops a running task replica (SIGTERM, Grace, SIGKILL). The
// caller still reports its exit through TaskExited.
type StopTask struct {
	Key    TaskKey
	Epoch  uint64
	Reason string
	Grace  time.Duration
}

// SaveJob persists a manager's job record (it changed).
type SaveJob struct{ Job JobRecord }

// ForgetJob says the market dropped a job's record, and the caller
// deletes what it keeps of the job: the stored record and, unless
// KeepEvents, its event log. A finished job is forgotten when its
// retention has passed (after its last SaveJob); an unfinished one held
// back after a restart when a peer took it over meanwhile (KeepEvents:
// its event log says so).
type ForgetJob struct {
	Job        string
	KeepEvents bool
}

// Replicate asks the caller to store copies of job records this node
// manages on other nodes, each record on its Peers, through the
// job-record protocol, and to report with Replicated(Batch) how many
// peers stored each. It follows the SaveJob of every record it holds.
type Replicate struct {
	Batch   uint64
	Records []ReplicaCopy
}

// ReplicaCopy is one record to copy and the peers to copy it to, its
// replica set, which travels with it: the closest live member of it takes
// the job over if this node is gone. The record also goes to Drop, the
// members of the job's earlier replica sets not in this one (the view
// changed): a holder outside a copy's replica set drops its copy, so
// that a stale copy never outlives its job and is taken over.
type ReplicaCopy struct {
	Record JobRecord
	Peers  []NodeID
	Drop   []NodeID
}

// DropReplica tells the caller to delete the copy of a job record it
// holds for another manager: this node took the job over, or (Expired)
// the job finished a retention ago.
type DropReplica struct {
	Job     string
	Expired bool
}

// RecordRuntime persists one observed runtime for the prediction history.
type RecordRuntime struct {
	Type    string
	Runtime time.Duration
}

// AttemptEnded reports that an attempt of a task replica this node
// manages ended, as the manager saw it: the caller keeps and signs its
// schedule record (market/acct) for accounting. Ready is when the
// attempt became ready to place.
type AttemptEnded struct {
	Key       TaskKey
	Name      string
	Type      string
	Owner     string
	Image     bool
	Request   resource.Request
	Submitted time.Time
	Ready     time.Time
	Attempt   AttemptRecord
}

// Event is a line for the job's event log.
type Event struct {
	Job  string
	Time time.Time
	Text string
}

// RoundClosed reports a single-task auction round this node manages that
// closed with at least one bid: Opened is when its CFPs went out, Closed
// when the bids were ranked and the first award was decided (and sent).
// Both are market times (the now of the call that did it). It is for
// tracing and benchmarks; a caller may ignore it.
type RoundClosed struct {
	Auction AuctionID
	Opened  time.Time
	Closed  time.Time
	Bids    int // bids received in the round
	Invited int // nodes invited directly (a broadcast reaches others too)
}

// Refused reports a message or request the market refused, by reason
// (docs/security.md), for the node's metrics; the job's event log says
// more.
type Refused struct {
	Reason string
	From   NodeID
}

func (Refused) effect()       {}
func (Send) effect()          {}
func (Broadcast) effect()     {}
func (StartTask) effect()     {}
func (StopTask) effect()      {}
func (SaveJob) effect()       {}
func (ForgetJob) effect()     {}
func (Replicate) effect()     {}
func (DropReplica) effect()   {}
func (RecordRuntime) effect() {}
func (Event) effect()         {}
func (AttemptEnded) effect()  {}
func (RoundClosed) effect()   {}
