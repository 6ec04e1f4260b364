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

// ForgetJob says a finished job's retention has passed: the market has
// dropped its record, and the caller deletes what it keeps of the job (the
// stored record, its event log). It follows the job's last SaveJob.
type ForgetJob struct{ Job string }

// RecordRuntime persists one observed runtime for the prediction history.
type RecordRuntime struct {
	Type    string
	Runtime time.Duration
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

func (Send) effect()          {}
func (Broadcast) effect()     {}
func (StartTask) effect()     {}
func (StopTask) effect()      {}
func (SaveJob) effect()       {}
func (ForgetJob) effect()     {}
func (RecordRuntime) effect() {}
func (Event) effect()         {}
func (RoundClosed) effect()   {}
