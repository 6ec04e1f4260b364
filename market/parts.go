package market

import (
	"github.com/agora-sched/agora/market/fairshare"
	"math/rand"
	"time"

	"github.com/agora-sched/agora/market/predict"
)

// The market's parts. Each is a receiver with its own state; all share
// one *shared (the clock, the configuration, the effects, the job table,
// the view and the deadline queue), and each names the other parts it
// calls, so that what failover needs of the auctions, say, is written
// where failover is declared. The contractor (contractor.go), the
// tickets (tickets.go) and the replication of records (replication.go)
// are parts too.

// shared is the state every part reads and writes.
type shared struct {
	cfg    Config
	now    time.Time
	rng    *rand.Rand
	scorer Scorer

	out   []Effect
	saves []Effect
	local []localMsg
	depth int
	dirty map[string]bool

	// the job table
	jobs     map[string]*JobRecord
	jobOrder []string // submission order; may name forgotten jobs (see forgetFinished)
	stale    int      // forgotten jobs still in jobOrder
	// retired lists finished jobs by finish time, for forgetFinished; a
	// job may appear more than once (saved again after it finished).
	retired []retiredJob
	active  []string // unfinished jobs, submission order
	// firstRecord caches, per large job, the index of each task's first
	// replica record (taskOf); dropped with the job.
	firstRecord map[string]map[string]int
	// the rounds open for the jobs' tasks (auction.go, gang.go)
	auctions map[TaskKey]*auction
	// parked are the auctions that found no node that could hold their
	// replica for ParkAfter: they open a round every ParkEvery, and at
	// once when a peer joins or restarts (auction.go, wakeParked).
	parked      map[TaskKey]struct{}
	parkedGangs map[string]struct{}
	gangs       map[string]*gangAuction
	// dl is the deadline queue (timers.go): every time Tick has work.
	dl deadlines

	view   map[NodeID]*Peer
	loaded int // peers of the view with a queued task: steal victims
	// signed is this node's latest proof per replica it runs (proofs.go),
	// kept so that a lease renewal does not sign again.
	signed map[TaskKey]signedProof
	// learned is the manager's cluster-wide runtime model per job type,
	// fed by its tasks' successful completions wherever they ran.
	learned *predict.Runtime
	// fs is the fair share: usage charged here, peers' summaries, the
	// factors (fairshare.go).
	fs *fairshare.Book
	// fsDirty says usage was charged since the last summary went out,
	// fsFull that the next must be a full one (a peer joined the view);
	// fsNext is when the next one may go.
	fsDirty, fsFull bool
	fsNext          time.Time
}

// manager runs the jobs' lifecycle: submission, restore, the tasks'
// reports, leases, job ends and retention (manager.go, reports.go,
// retention.go).
type manager struct {
	*shared
	auc  *auctioneer
	con  *contractor
	fo   *failover
	gang *gangManager
	rep  *replication
	sp   *splits
	tix  *tickets
}

// auctioneer places the tasks of this node's jobs one replica at a time
// by contract net (auction.go, round.go, data.go, waiting.go).
type auctioneer struct {
	*shared
	con  *contractor
	gang *gangManager
	mgr  *manager
	tix  *tickets

	// inherited holds, for replicas an adopted record showed pending, the
	// epoch the previous manager had given them; cleared when this node
	// opens its own round (see catchUp).
	inherited map[TaskKey]uint64
	// awardStart is the start each awarded replica's winning bid
	// predicted (waiting.go).
	awardStart map[TaskKey]awardNote
}

// gangManager places gangs whole and keeps the head of the line's
// reservation (gang.go, head.go, head_inputs.go).
type gangManager struct {
	*shared
	auc *auctioneer
	con *contractor
	mgr *manager
	tix *tickets

	headStale bool       // the head (head.go) must be computed again
	hin       headInputs // what the view says of the head candidate
}

// failover keeps this node's jobs alive across managers: the copies it
// holds for other managers, its executors' searches for new managers,
// adoption, and a restart's reclaim (failover.go, adopt.go, rehome.go,
// reclaim.go).
type failover struct {
	*shared
	auc  *auctioneer
	con  *contractor
	gang *gangManager
	mgr  *manager
	sp   *splits

	copies  copies
	rehome  map[string]*rehoming
	reclaim reclaim
	// adoptedAt is when this node took each unfinished job over
	// (fromPreviousManager).
	adoptedAt map[string]time.Time
	// settledAt is when the view settled after the start (Reclaim); zero
	// before.
	settledAt time.Time
}

// splits resolves a job managed on both sides of a cut (split.go).
type splits struct {
	*shared
	fo  *failover
	mgr *manager
	rep *replication
	tix *tickets

	// takenFrom is, per job this node took over, the manager it took it
	// from, and gone the peers that left the view: the managers a job may
	// have been split between by a cut meet again through them.
	takenFrom map[string]NodeID
	gone      map[NodeID]struct{}
	// yieldedTo is, per job this node gave up to another manager, that
	// manager; outranked, per job this node kept against claimers, those
	// claimers. A node that took the job over from a copy of a loser's
	// record meets the winner through them.
	yieldedTo map[string]NodeID
	outranked map[string][]NodeID
	disputes  map[claimKey]dispute // disputeRank
	claims    map[claimKey]*openClaim
}
