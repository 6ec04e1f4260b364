package market

import (
	"fmt"
	"github.com/agora-sched/agora/market/fairshare"
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
	// Users is what the limited users' jobs hold and wait for on the
	// jobs the peer manages (userlimits.go).
	Users []UserUsage
	// Steal is what its queue could give a thief (steal.go).
	Steal StealOffer
	// Drained says its operator drained it (its advert's drained): it
	// takes no work until undrained, which wakes the parked auctions.
	Drained bool
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
//
// Market itself is the shell: the public calls, the clock (enter/leave),
// Tick's phases and message dispatch. The work is done by its parts
// (parts.go), each a receiver over the shared state and its own, naming
// the other parts it calls.
type Market struct {
	*shared
	mgr  *manager
	auc  *auctioneer
	gang *gangManager
	fo   *failover
	sp   *splits
	con  *contractor
	tix  *tickets
	rep  *replication
}

type localMsg struct {
	from NodeID
	msg  Msg
}

// New creates a market for one node.
func New(cfg Config) (*Market, error) {
	cfg = cfg.WithDefaults()
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
	sh := &shared{
		cfg: cfg, rng: newRand(cfg.Seed), scorer: cfg.Scorers[cfg.Scorer], dirty: map[string]bool{},
		jobs: map[string]*JobRecord{}, firstRecord: map[string]map[string]int{}, auctions: map[TaskKey]*auction{},
		gangs: map[string]*gangAuction{}, view: map[NodeID]*Peer{}, learned: predict.NewRuntime(cfg.Runtime),
		fs: fairshare.NewBook(cfg.FairShare.HalfLife, usageSkew),
	}
	m := &Market{
		shared: sh,
		mgr:    &manager{shared: sh},
		auc:    &auctioneer{shared: sh, inherited: map[TaskKey]uint64{}},
		gang:   &gangManager{shared: sh},
		fo:     &failover{shared: sh, rehome: map[string]*rehoming{}},
		sp: &splits{shared: sh, takenFrom: map[string]NodeID{}, gone: map[NodeID]struct{}{},
			yieldedTo: map[string]NodeID{}, outranked: map[string][]NodeID{}, disputes: map[claimKey]dispute{}},
		con: newContractor(cfg.Capacity, cfg.Runtime),
		tix: &tickets{self: cfg.Self, book: book, checks: checks},
		rep: &replication{cfg: &sh.cfg, env: sh},
	}
	m.con.shared, m.tix.shared = sh, sh
	m.mgr.auc, m.mgr.con, m.mgr.fo, m.mgr.gang, m.mgr.rep, m.mgr.sp, m.mgr.tix = m.auc, m.con, m.fo, m.gang, m.rep, m.sp, m.tix
	m.auc.con, m.auc.gang, m.auc.mgr, m.auc.tix = m.con, m.gang, m.mgr, m.tix
	m.gang.auc, m.gang.con, m.gang.mgr, m.gang.tix = m.auc, m.con, m.mgr, m.tix
	m.fo.auc, m.fo.con, m.fo.gang, m.fo.mgr, m.fo.sp = m.auc, m.con, m.gang, m.mgr, m.sp
	m.sp.fo, m.sp.mgr, m.sp.rep, m.sp.tix = m.fo, m.mgr, m.rep, m.tix
	m.con.auc, m.con.gang, m.con.sp, m.con.tix = m.auc, m.gang, m.sp, m.tix
	m.tix.con = m.con
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
	m.gang.headStale = true
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

func (sh *shared) emit(e Effect) { sh.out = append(sh.out, e) }

func (sh *shared) send(to NodeID, msg Msg) {
	if to == sh.cfg.Self {
		sh.local = append(sh.local, localMsg{from: sh.cfg.Self, msg: msg})
		return
	}
	if s, ok := msg.(TaskStatus); ok {
		msg = sh.sign(to, s)
	}
	sh.emit(Send{To: to, Msg: msg})
}

func (sh *shared) event(job, text string) {
	sh.emit(Event{Job: job, Time: sh.now, Text: text})
}

// touch marks a job's record changed: Ready emits one SaveJob for it,
// however many calls touched it since the last Ready.
func (sh *shared) touch(job string) {
	sh.dirty[job] = true
	sh.dl.retimeJob(job)
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
					m.mgr.retire(j)
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
		m.tix.refuse(RefuseSender, from, "", fmt.Sprintf("dropped a %s from %s that claims to come from %s", Kind(msg), from, s))
		return
	}
	switch x := msg.(type) {
	case CFP:
		m.con.onCFP(from, x)
	case Bid:
		m.auc.onBid(x)
	case NoBid:
		m.auc.onNoBid(x)
	case Award:
		m.con.onAward(x)
	case AwardReply:
		m.auc.onAwardReply(x)
	case TaskStatus:
		m.mgr.onTaskStatus(x)
	case CancelTask:
		m.con.onCancelTask(from, x)
	case ResultAck:
		m.con.onResultAck(from, x)
	case Hold:
		m.con.onHold(x)
	case HoldReply:
		m.gang.onHoldReply(x)
	case Commit:
		m.con.onCommit(from, x)
	case Release:
		m.con.onRelease(from, x)
	case Reserve:
		m.con.onReserve(from, x)
	case StealRequest:
		m.con.onStealRequest(x)
	case Transfer:
		m.con.onTransfer(x)
	case ManagerQuery:
		m.fo.onManagerQuery(x)
	case ManagerAnswer:
		m.fo.onManagerAnswer(x)
	case UsageSummary:
		m.onUsage(from, x)
	case ManagerClaim:
		m.sp.onManagerClaim(x)
	default:
		panic(fmt.Sprintf("market: unknown message %T", msg))
	}
}

// ObserveLoad feeds a measured CPU load sample (0..1) to the load
// forecaster used when bidding.
func (m *Market) ObserveLoad(now time.Time, load float64) {
	m.con.load.Observe(now, load)
}

// RestoreHistory loads the runtime predictor's persisted state.
func (m *Market) RestoreHistory(stats []predict.TypeStats) { m.con.runtime.Restore(stats) }

// History returns the runtime predictor's state for persistence.
func (m *Market) History() []predict.TypeStats { return m.con.runtime.Snapshot() }

// Predict returns this node's runtime prediction for a job type.
func (m *Market) Predict(jobType string, estimate time.Duration) predict.Prediction {
	return m.con.runtime.Predict(jobType, estimate)
}

// Free is what this node has not reserved.
func (m *Market) Free() resource.Vector { return m.con.free.Clone() }

// Reserved is the gang reservation this node honours first and the room
// beside every reservation it honours, for its adverts; the zero value
// when it holds none.
func (m *Market) Reserved() ReservedRoom { return m.gang.reserved() }

// PredictedWait is how long a new one-core task would wait here.
func (m *Market) PredictedWait(now time.Time) time.Duration { return m.gang.predictedWait(now) }

// Waiting is the first gang this node is placing that has waited long
// (see gangManager.waiting), for its adverts.
func (m *Market) Waiting() WaitingGang { return m.gang.waiting() }

// Live reports whether a node is this one or in its view.
func (m *Market) Live(id NodeID) bool { return m.live(id) }

// Capacity is this node's capacity.
func (m *Market) Capacity() resource.Vector { return m.con.capacity.Clone() }

// QueueLen is the number of accepted tasks waiting to start here.
func (m *Market) QueueLen() int { return len(m.con.queue) }

// Queued lists the replicas awarded to this node and waiting to start,
// in queue order.
func (m *Market) Queued() []TaskKey {
	out := make([]TaskKey, 0, len(m.con.queue))
	for _, k := range m.con.queue {
		out = append(out, k.spec.Key)
	}
	return out
}

// RunningLen is the number of tasks running here.
func (m *Market) RunningLen() int { return len(m.con.running) }

// Running lists the task replicas running here, sorted by key.
func (m *Market) Running() []TaskKey {
	var out []TaskKey
	for k := range m.con.running {
		out = append(out, k)
	}
	sortKeys(out)
	return out
}
