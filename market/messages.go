package market

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// Msg is a message between markets on different nodes. The node encodes
// each one on the wire (docs/protocol.md); the simulator passes them as
// values.
type Msg interface {
	msgKind() string
	// Sender is the node the message says it comes from, or "" when it
	// names none (a manager's CancelTask, Commit, Release and ResultAck:
	// the market checks those against the task's manager). Step drops a
	// message whose Sender is set and is not the node that delivered it.
	Sender() NodeID
}

// TaskOffer is what a CFP tells bidders about a task: enough to judge
// feasibility and to bid, not the command.
type TaskOffer struct {
	Key TaskKey `json:"key"`
	// GangSize is the number of replicas that must start together (0 or
	// 1: not a gang); the offer then stands for the whole gang and Key
	// names replica 0. Pack lets several replicas share a node.
	GangSize int              `json:"gang_size,omitempty"`
	Pack     bool             `json:"pack,omitempty"`
	Type     string           `json:"type"`
	Priority int              `json:"priority"`
	Deadline time.Time        `json:"deadline,omitzero"`
	Estimate time.Duration    `json:"estimate_ns,omitempty"`
	Request  resource.Request `json:"request"`
	// Inputs are the data the task will fetch (manifests and bytes, no
	// holders): a bidder that holds some of it bids sooner (locality).
	Inputs []DataRef `json:"inputs,omitempty"`
}

// TaskSpec is everything an executor needs to run a task replica.
type TaskSpec struct {
	TaskOffer
	Command            []string          `json:"command"`
	Env                map[string]string `json:"env,omitempty"`
	Timeout            time.Duration     `json:"timeout_ns,omitempty"`
	CheckpointInterval time.Duration     `json:"checkpoint_interval_ns,omitempty"`
	Epoch              uint64            `json:"epoch"`
	Attempt            int               `json:"attempt"`
	// Rank and Peers are set for gang replicas: this replica's rank and
	// the nodes of all replicas in rank order (AGORA_RANK, AGORA_PEERS).
	Rank  int      `json:"rank,omitempty"`
	Peers []NodeID `json:"peers,omitempty"`
	// Owner is the user who submitted the job, in a network with an
	// authority (the executor checks it against the job's ticket).
	Owner string `json:"owner,omitempty"`
	// Previous are the replica's earlier placements, oldest first: a
	// resumed attempt takes a checkpoint only from one of these.
	Previous []Placement `json:"previous,omitempty"`
	// Inputs are placed in the work directory before the task starts;
	// Outputs are what it must leave there (the spec's).
	Inputs  []InputRef    `json:"inputs,omitempty"`
	Outputs []spec.Output `json:"outputs,omitempty"`
	// Image and ImageID are the spec's (spec.Task): the image the task
	// runs in and the ID it was pinned to at submission.
	Image   string `json:"image,omitempty"`
	ImageID string `json:"image_id,omitempty"`
}

// Placement is one placement of a task replica: its epoch and executor.
type Placement struct {
	Epoch uint64 `json:"epoch"`
	Node  NodeID `json:"node"`
}

// CFP is a manager's call for proposals for one task replica.
type CFP struct {
	Auction AuctionID `json:"auction"`
	Manager NodeID    `json:"manager"`
	Task    TaskOffer `json:"task"`
	// Ticket is the job's signed submission, in a network with an
	// authority, when the manager does not know the receiver has it.
	Ticket []byte `json:"ticket,omitempty"`
}

// Bid is a contractor's proposal: its score and when it predicts it would
// start and finish the task. Preempt says it would evict lower-priority
// tasks to start it.
type Bid struct {
	Auction AuctionID     `json:"auction"`
	Bidder  NodeID        `json:"bidder"`
	Score   float64       `json:"score"`
	Start   time.Time     `json:"start"`
	Finish  time.Time     `json:"finish"`
	Runtime time.Duration `json:"runtime_ns"`
	Preempt bool          `json:"preempt,omitempty"`
	// Slots is, for a gang CFP, how many replicas the bidder could start
	// now (at most 1 unless the gang may pack).
	Slots int `json:"slots,omitempty"`
}

// NoBid is a contractor's refusal with the reason. Permanent means the
// node could never run the task (its capacity or constraints rule it
// out), as opposed to being busy.
type NoBid struct {
	Auction   AuctionID `json:"auction"`
	Bidder    NodeID    `json:"bidder"`
	Reason    string    `json:"reason"`
	Permanent bool      `json:"permanent,omitempty"`
	// NeedTicket asks the manager for the job's ticket with its next
	// call: the contractor holds none.
	NeedTicket bool `json:"need_ticket,omitempty"`
}

// Award gives a task to the winning bidder, who must accept or decline.
type Award struct {
	Auction AuctionID `json:"auction"`
	Manager NodeID    `json:"manager"`
	Task    TaskSpec  `json:"task"`
	Bid     Bid       `json:"bid"`
	// Last says the manager holds no other bid: the winner should accept
	// if it can run the task at all, even later than it bid, since a new
	// round would only ask it again.
	Last bool `json:"last,omitempty"`
	// Ticket is as in CFP.
	Ticket []byte `json:"ticket,omitempty"`
	// Direct marks an award without a bid: a replica stolen for the
	// receiver, which asked for work (StealRequest).
	Direct bool `json:"direct,omitempty"`
}

// AwardReply accepts or declines an award.
type AwardReply struct {
	Auction AuctionID `json:"auction"`
	Bidder  NodeID    `json:"bidder"`
	Accept  bool      `json:"accept"`
	Reason  string    `json:"reason,omitempty"`
	// Start is, on an accept, when the contractor predicts the replica
	// starts with its queue as it is now: later than its bid said when
	// other awards came in between.
	Start time.Time `json:"start,omitzero"`
}

// TaskStatus is an executor's report on a task replica to its manager.
type TaskStatus struct {
	Key      TaskKey       `json:"key"`
	Epoch    uint64        `json:"epoch"`
	Attempt  int           `json:"attempt"`
	Node     NodeID        `json:"node"`
	State    TaskState     `json:"state"`
	ExitCode int           `json:"exit_code"`
	Reason   string        `json:"reason,omitempty"`
	Time     time.Time     `json:"time"`
	Runtime  time.Duration `json:"runtime_ns,omitempty"`
	// AckWanted marks a final report whose executor repeats it until the
	// manager answers with a ResultAck (an executor that does not set it
	// repeats it a fixed number of times, and is never acknowledged).
	AckWanted bool `json:"ack_wanted,omitempty"`
	// Outputs, on a success, are the attempt's stored outputs.
	Outputs *DataRef `json:"outputs,omitempty"`
	// Proof, on a report of a replica held (awarded, running) or that
	// succeeded, is the executor's signature over ProofBytes naming the
	// manager it reports to (proofs.go).
	Proof []byte `json:"proof,omitempty"`
}

// ResultAck tells an executor that its manager has the final report of
// one attempt of a task replica, so that it stops repeating it. The
// executor still keeps the report for a while, to send it to a node that
// adopts the job.
type ResultAck struct {
	Key     TaskKey `json:"key"`
	Epoch   uint64  `json:"epoch"`
	Attempt int     `json:"attempt"`
}

// CancelTask tells an executor to stop (or drop from its queue) a task.
type CancelTask struct {
	Key    TaskKey `json:"key"`
	Epoch  uint64  `json:"epoch"`
	Reason string  `json:"reason"`
}

// Hold asks a gang member to set aside, now, the resources of one
// replica until Expires (phase one of a gang start).
type Hold struct {
	Auction AuctionID `json:"auction"`
	Manager NodeID    `json:"manager"`
	Task    TaskSpec  `json:"task"`
	Expires time.Time `json:"expires"`
	// Ticket is as in CFP.
	Ticket []byte `json:"ticket,omitempty"`
}

// HoldReply says whether the hold was taken.
type HoldReply struct {
	Auction AuctionID `json:"auction"`
	Bidder  NodeID    `json:"bidder"`
	Replica int       `json:"replica"`
	OK      bool      `json:"ok"`
	Reason  string    `json:"reason,omitempty"`
}

// Commit turns a hold into a running replica (phase two), with its rank
// and the gang's nodes in rank order.
type Commit struct {
	Key   TaskKey  `json:"key"`
	Epoch uint64   `json:"epoch"`
	Rank  int      `json:"rank"`
	Peers []NodeID `json:"peers"`
}

// Release gives up a hold.
type Release struct {
	Key   TaskKey `json:"key"`
	Epoch uint64  `json:"epoch"`
}

// Reserve asks a node to stop starting tasks that would take the
// resources a starving gang replica needs, until Until (a backfill-aware
// reservation); a later Reserve renews it, Until in the past cancels it.
type Reserve struct {
	Auction  AuctionID        `json:"auction"`
	Manager  NodeID           `json:"manager"`
	Request  resource.Request `json:"request"`
	Priority int              `json:"priority"`
	Until    time.Time        `json:"until"`
	// Since is when the gang became ready to run. A node keeps room for
	// one gang, the first by priority, then by Since (oldest first, as
	// EASY reserves for the head of its queue), then by gang ID; the
	// zero time (a sender that does not say) comes after every known
	// one.
	Since time.Time `json:"since,omitzero"`
}

// StealRequest is an idle node asking a loaded one for queued tasks that
// fit in Room, at most Max of them. A thief that keeps room for the head
// (head.go) sets EndsBy, its shadow time: only tasks whose runtime's
// upper bound ends by then may come, as EASY backfills its head's room
// from its whole queue. The zero EndsBy: any.
type StealRequest struct {
	Thief  NodeID           `json:"thief"`
	Room   resource.Request `json:"room"`
	Max    int              `json:"max"`
	EndsBy time.Time        `json:"ends_by,omitzero"`
}

// Transfer tells a manager that the executor From gave up a queued
// replica (never started) so that it can be awarded to To.
type Transfer struct {
	Key   TaskKey `json:"key"`
	Epoch uint64  `json:"epoch"`
	From  NodeID  `json:"from"`
	To    NodeID  `json:"to"`
}

// ManagerQuery asks a peer whether it manages a job now: an executor
// looking for the new manager of a job whose manager is gone or
// restarted, or a restarted manager asking whether a peer took its job
// over while it was down.
type ManagerQuery struct {
	Job  string `json:"job"`
	From NodeID `json:"from"`
}

// ManagerAnswer answers a ManagerQuery: whether From manages Job. A
// manager that gives a job up to another (split.go) sends it, unasked,
// to the executors of the job's live attempts, with Successor naming the
// node it gave the job up to: they ask that node first whether it manages
// the job, and report to it once it says so.
type ManagerAnswer struct {
	Job       string `json:"job"`
	From      NodeID `json:"from"`
	Manages   bool   `json:"manages,omitempty"`
	Successor NodeID `json:"successor,omitempty"`
}

func (ManagerQuery) msgKind() string  { return "manager_query" }
func (ManagerAnswer) msgKind() string { return "manager_answer" }

func (m ManagerQuery) Sender() NodeID  { return m.From }
func (m ManagerAnswer) Sender() NodeID { return m.From }

func (m StealRequest) Sender() NodeID { return m.Thief }
func (m Transfer) Sender() NodeID     { return m.From }
func (m Hold) Sender() NodeID         { return m.Manager }
func (m HoldReply) Sender() NodeID    { return m.Bidder }
func (Commit) Sender() NodeID         { return "" }
func (Release) Sender() NodeID        { return "" }
func (m Reserve) Sender() NodeID      { return m.Manager }
func (m CFP) Sender() NodeID          { return m.Manager }
func (m Bid) Sender() NodeID          { return m.Bidder }
func (m NoBid) Sender() NodeID        { return m.Bidder }
func (m Award) Sender() NodeID        { return m.Manager }
func (m AwardReply) Sender() NodeID   { return m.Bidder }
func (m TaskStatus) Sender() NodeID   { return m.Node }
func (CancelTask) Sender() NodeID     { return "" }
func (ResultAck) Sender() NodeID      { return "" }

func (StealRequest) msgKind() string { return "steal_request" }
func (Transfer) msgKind() string     { return "transfer" }

func (Hold) msgKind() string      { return "hold" }
func (HoldReply) msgKind() string { return "hold_reply" }
func (Commit) msgKind() string    { return "commit" }
func (Release) msgKind() string   { return "release" }
func (Reserve) msgKind() string   { return "reserve" }

func (CFP) msgKind() string        { return "cfp" }
func (Bid) msgKind() string        { return "bid" }
func (NoBid) msgKind() string      { return "nobid" }
func (Award) msgKind() string      { return "award" }
func (AwardReply) msgKind() string { return "award_reply" }
func (TaskStatus) msgKind() string { return "task_status" }
func (CancelTask) msgKind() string { return "cancel" }
func (ResultAck) msgKind() string  { return "result_ack" }

// Kind is the message's wire kind name.
func Kind(m Msg) string { return m.msgKind() }
