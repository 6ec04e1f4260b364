package market

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/predict"
)

// Peer is the manager's view of another node, from its adverts.
type Peer struct {
	ID            NodeID
	Site          string
	Labels        map[string]string
	Limits        resource.Enforcement // the task limits it enforces
	Holds         []string             // manifests of task data it holds whole (its advert's)
	Capacity      resource.Vector
	Free          resource.Vector
	Queue         int
	PredictedWait time.Duration
	// Reserved is the gang reservation the peer keeps room for, if any.
	Reserved ReservedRoom
	// Waiting is the first gang the peer is placing that has waited
	// long (head.go); HeadRoom when it will have room for the head it
	// sees.
	Waiting  WaitingGang
	HeadRoom HeadRoom
	// Boot is the peer's boot counter (0: unknown): an advert with
	// another one than the view holds comes from a restarted peer.
	Boot uint64
	Seen time.Time
	hash [32]byte // SHA-256 of ID, for closeness (Closest)
	hin  headSlot // its place in headInputs
}

// ReservedRoom is what a node's adverts say of the gang reservation it
// honours first: the gang, and the room free beside it. A node counts
// every reservation it honours against a gang that holds none there (see
// minusReserves), so a manager places a replica of any other gang there
// only in Unreserved. The zero value means no reservation.
type ReservedRoom struct {
	Gang       string // "job/task"; empty when none
	Unreserved resource.Vector
}

// Market is one node's scheduling state machine: the manager of the jobs
// submitted to it and a contractor bidding for and running tasks. It is
// not safe for concurrent use; the caller serialises all calls.
type Market struct {
	cfg    Config
	now    time.Time
	rng    *rand.Rand
	scorer Scorer

	out   []Effect
	saves []Effect
	local []localMsg
	depth int
	dirty map[string]bool

	// manager role
	jobs     map[string]*JobRecord
	jobOrder []string // submission order; may name forgotten jobs (see forgetFinished)
	stale    int      // forgotten jobs still in jobOrder
	// retired lists finished jobs by finish time, for forgetFinished; a
	// job may appear more than once (saved again after it finished).
	retired  []retiredJob
	active   []string // unfinished jobs, submission order
	auctions map[TaskKey]*auction
	// dl is the deadline queue (timers.go): every time Tick has work.
	dl deadlines
	// inherited holds, for replicas an adopted record showed pending, the
	// epoch the previous manager had given them; cleared when this node
	// opens its own round (see catchUp).
	inherited map[TaskKey]uint64
	// firstRecord caches, per large job, the index of each task's first
	// replica record (taskOf); dropped with the job.
	firstRecord map[string]map[string]int
	gangs       map[string]*gangAuction
	view        map[NodeID]*Peer
	loaded      int        // peers of the view with a queued task: steal victims
	headStale   bool       // the head (head.go) must be computed again
	hin         headInputs // what the view says of the head candidate
	// learned is the manager's cluster-wide runtime model per job type,
	// fed by its tasks' successful completions wherever they ran.
	learned *predict.Runtime

	// failover: this node's records' copies on peers, the copies it holds
	// for other managers, its executors' searches for new managers, and
	// a restart's reclaim
	rep     replication
	copies  copies
	rehome  map[string]*rehoming
	reclaim reclaim
	// adoptedAt is when this node took each unfinished job over
	// (fromPreviousManager).
	adoptedAt map[string]time.Time
	// takenFrom is, per job this node took over, the manager it took it
	// from, and gone the peers that left the view: the managers a job may
	// have been split between by a cut meet again through them (split.go).
	takenFrom map[string]NodeID
	gone      map[NodeID]struct{}
	// yieldedTo is, per job this node gave up to another manager, that
	// manager; outranked, per job this node kept against claimers, those
	// claimers. A node that took the job over from a copy of a loser's
	// record meets the winner through them (split.go).
	yieldedTo map[string]NodeID
	outranked map[string][]NodeID
	disputes  map[claimKey]ClaimRank // disputeRank
	claims    map[claimKey]*openClaim
	// awardStart is the start each awarded replica's winning bid
	// predicted (waiting.go).
	awardStart map[TaskKey]awardNote
	// settledAt is when the view settled after the start (Reclaim); zero
	// before.
	settledAt time.Time

	// contractor role
	c         contractor
	lastSteal time.Time
	stealGap  time.Duration
	stealMark int // c.accepted at the last steal request
	lastBeat  time.Time
	draining  bool

	// tix is what this node knows of job tickets (tickets.go; trust.go
	// says what it checks with them)
	tix    tickets
	stolen time.Time // when this node last asked for work to steal
}

type localMsg struct {
	from NodeID
	msg  Msg
}

// New creates a market for one node.
func New(cfg Config) (*Market, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var book *auth.Book
	checks := cfg.TicketChecks
	if cfg.Trust != nil {
		book = cfg.Trust.Clone()
		if checks == nil {
			checks = readTickets{}
		}
		if s := checks.Signatures(); s != nil {
			book.ShareTickets(s)
		}
	}
	m := &Market{
		tix: tickets{self: cfg.Self, book: book, checks: checks},
		cfg: cfg, rng: newRand(cfg.Seed), scorer: cfg.Scorers[cfg.Scorer], dirty: map[string]bool{},
		jobs: map[string]*JobRecord{}, firstRecord: map[string]map[string]int{}, auctions: map[TaskKey]*auction{}, inherited: map[TaskKey]uint64{}, gangs: map[string]*gangAuction{}, view: map[NodeID]*Peer{},
		c: newContractor(cfg.Capacity, cfg.Runtime), learned: predict.NewRuntime(cfg.Runtime), rehome: map[string]*rehoming{},
		takenFrom: map[string]NodeID{}, gone: map[NodeID]struct{}{},
		yieldedTo: map[string]NodeID{}, outranked: map[string][]NodeID{}, disputes: map[claimKey]ClaimRank{},
	}
	m.rep.cfg, m.rep.env = &m.cfg, m
	return m, nil
}

// Config returns the market's configuration with defaults applied.
func (m *Market) Config() Config { return m.cfg }

// enter and leave bracket every public entry point: they set the clock
// and, on the way out, deliver messages the node sent to itself.
func (m *Market) enter(now time.Time) {
	if now.After(m.now) {
		m.now = now
	}
	m.headStale = true
	m.depth++
}

func (m *Market) leave() {
	m.depth--
	if m.depth > 0 {
		return
	}
	for len(m.local) > 0 {
		lm := m.local[0]
		m.local = m.local[1:]
		m.depth++
		m.step(lm.from, lm.msg)
		m.depth--
	}
}

func (m *Market) emit(e Effect) { m.out = append(m.out, e) }

func (m *Market) send(to NodeID, msg Msg) {
	if to == m.cfg.Self {
		m.local = append(m.local, localMsg{from: m.cfg.Self, msg: msg})
		return
	}
	m.emit(Send{To: to, Msg: msg})
}

func (m *Market) event(job, text string) {
	m.emit(Event{Job: job, Time: m.now, Text: text})
}

// touch marks a job's record changed: Ready emits one SaveJob for it,
// however many calls touched it since the last Ready.
func (m *Market) touch(job string) {
	m.dirty[job] = true
	m.dl.retimeJob(job)
}

// flushSaves turns dirty jobs into SaveJob effects, in job ID order. It
// runs once per Ready, not per call: a caller that makes many calls per
// Ready (the node runs up to a loop turn's events) gets one copy of each
// record, where a copy per call cost a clone of the whole record per
// message, quadratic in a job's tasks.
func (m *Market) flushSaves() {
	if len(m.dirty) == 0 {
		return
	}
	ids := make([]string, 0, len(m.dirty))
	for id := range m.dirty {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if m.dirty[id] {
			if j, ok := m.jobs[id]; ok {
				c := j.Clone()
				m.saves = append(m.saves, SaveJob{Job: c})
				m.rep.note(c)
				if j.State.Terminal() {
					m.retire(j)
				}
			}
		}
	}
	m.dirty = map[string]bool{}
}

// Ready returns and clears the pending effects: SaveJob records first,
// then everything else in the order it arose.
func (m *Market) Ready() []Effect {
	m.flushSaves()
	if e := m.rep.urgentCopies(m.now); e != nil {
		m.out = append(m.out, e)
	}
	if len(m.out) == 0 && len(m.saves) == 0 {
		return nil
	}
	out := append(m.saves, m.out...)
	m.saves, m.out = nil, nil
	return out
}

// Step delivers an inbound message from another node.
func (m *Market) Step(now time.Time, from NodeID, msg Msg) {
	m.enter(now)
	defer m.leave()
	m.step(from, msg)
}

func (m *Market) step(from NodeID, msg Msg) {
	if s := msg.Sender(); s != "" && s != from {
		m.refuse(RefuseSender, from, "", fmt.Sprintf("dropped a %s from %s that claims to come from %s", Kind(msg), from, s))
		return
	}
	switch x := msg.(type) {
	case CFP:
		m.onCFP(from, x)
	case Bid:
		m.onBid(x)
	case NoBid:
		m.onNoBid(x)
	case Award:
		m.onAward(x)
	case AwardReply:
		m.onAwardReply(x)
	case TaskStatus:
		m.onTaskStatus(x)
	case CancelTask:
		m.onCancelTask(from, x)
	case ResultAck:
		m.onResultAck(from, x)
	case Hold:
		m.onHold(x)
	case HoldReply:
		m.onHoldReply(x)
	case Commit:
		m.onCommit(from, x)
	case Release:
		m.onRelease(from, x)
	case Reserve:
		m.onReserve(x)
	case StealRequest:
		m.onStealRequest(x)
	case Transfer:
		m.onTransfer(x)
	case ManagerQuery:
		m.onManagerQuery(x)
	case ManagerAnswer:
		m.onManagerAnswer(x)
	case ManagerClaim:
		m.onManagerClaim(x)
	default:
		panic(fmt.Sprintf("market: unknown message %T", msg))
	}
}

// ObserveLoad feeds a measured CPU load sample (0..1) to the load
// forecaster used when bidding.
func (m *Market) ObserveLoad(now time.Time, load float64) {
	m.c.load.Observe(now, load)
}

// RestoreHistory loads the runtime predictor's persisted state.
func (m *Market) RestoreHistory(stats []predict.TypeStats) { m.c.runtime.Restore(stats) }

// History returns the runtime predictor's state for persistence.
func (m *Market) History() []predict.TypeStats { return m.c.runtime.Snapshot() }

// Predict returns this node's runtime prediction for a job type.
func (m *Market) Predict(jobType string, estimate time.Duration) predict.Prediction {
	return m.c.runtime.Predict(jobType, estimate)
}

// Free is what this node has not reserved.
func (m *Market) Free() resource.Vector { return m.c.free.Clone() }

// Reserved is the gang reservation this node honours first and the room
// beside every reservation it honours, for its adverts; the zero value
// when it holds none.
func (m *Market) Reserved() ReservedRoom {
	c := &m.c
	m.refreshHead()
	if c.headKnown() {
		if r := c.headRes(); r != nil {
			return ReservedRoom{Gang: r.gang, Unreserved: c.availFor("")}
		}
		return ReservedRoom{}
	}
	var first *reservation
	for _, r := range c.reserves {
		if first == nil || reservedBefore(r, first) {
			first = r
		}
	}
	if first == nil {
		return ReservedRoom{}
	}
	return ReservedRoom{Gang: first.gang, Unreserved: c.availFor("")}
}

// Capacity is this node's capacity.
func (m *Market) Capacity() resource.Vector { return m.c.capacity.Clone() }

// QueueLen is the number of accepted tasks waiting to start here.
func (m *Market) QueueLen() int { return len(m.c.queue) }

// RunningLen is the number of tasks running here.
func (m *Market) RunningLen() int { return len(m.c.running) }

// PredictedWait is how long a new one-core task would wait here.
func (m *Market) PredictedWait(now time.Time) time.Duration {
	m.refreshHead()
	o := TaskOffer{Request: resource.Request{CPU: min(1000, m.c.capacity.CPU)}}
	return max(m.c.predictStart(o, now).Sub(now), 0)
}

// Running lists the task replicas running here, sorted by key.
func (m *Market) Running() []TaskKey {
	var out []TaskKey
	for k := range m.c.running {
		out = append(out, k)
	}
	sortKeys(out)
	return out
}
