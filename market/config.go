package market

import (
	"fmt"
	"github.com/agora-sched/agora/market/fairshare"
	"math/rand"
	"reflect"
	"slices"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/predict"
)

// Weights are the coefficients of the weighted bid score.
type Weights struct {
	Urgency    float64 `json:"urgency" yaml:"urgency"`
	Match      float64 `json:"match" yaml:"match"`
	Efficiency float64 `json:"efficiency" yaml:"efficiency"`
}

// DefaultWeights are the seed weights: urgency 0.4, match 0.3,
// efficiency 0.3.
var DefaultWeights = Weights{Urgency: 0.4, Match: 0.3, Efficiency: 0.3}

// Config configures one node's market. Zero fields take the defaults
// listed with each.
type Config struct {
	Self     NodeID
	Site     string
	Labels   map[string]string
	Capacity resource.Vector
	// Holds reports whether this node holds a manifest and all its
	// chunks (nil: it holds none): a bid for a task whose inputs are
	// here starts sooner and scores higher. DataRate is the transfer
	// rate a bid assumes for the rest, bytes a second; 100 MB/s.
	// DataReplicas is how many peers besides the maker keep a copy of
	// outputs and uploads; 2 (negative: none).
	Holds func(manifest string) bool
	// LocalUser, when set, says why this node runs no task of a job
	// owner ("" when it runs them): a node that runs tasks as their
	// owners' local accounts (--task-user map) has none for some users.
	// Its contractor then does not bid for them, saying why.
	LocalUser    func(owner string) string
	DataRate     int64
	DataReplicas int
	// JobDataLimit bounds the bytes of one job's outputs, all its tasks'
	// together (0: no bound): the success that goes past it fails the
	// job.
	JobDataLimit int64
	// Limits is what this node does with the limits tasks ask for: it
	// neither bids for nor takes a task asking for one it does not
	// enforce, unless Limits.Unenforced; the zero value enforces all.
	Limits resource.Enforcement

	// D is how many candidates receive a CFP (power of d choices); 3.
	D int
	// BidWindow is how long a manager waits for bids; 50ms.
	BidWindow time.Duration
	// MaxBidWindow bounds how long a window may be extended while the
	// bids in hand are poor and invited nodes are still silent; 500ms.
	MaxBidWindow time.Duration
	// AwardTimeout is how long a manager waits for an award's answer; 2s.
	AwardTimeout time.Duration
	// SchedulingTimeout is how long a task may find no node that could
	// hold it before its job fails with a reason, for jobs whose spec
	// sets no pending_timeout; 0 (the default) waits for such a node.
	SchedulingTimeout time.Duration
	// RetryBase and RetryMax bound the exponential back-off between
	// attempts of a failed task; 1s and 30s.
	RetryBase, RetryMax time.Duration
	// RoundBackoff is the pause before a new round when nobody bid; it
	// doubles per round up to 2s; 100ms.
	RoundBackoff time.Duration
	// BidSlack is how much later than its bid a contractor may start a
	// task and still accept the award; 250ms (or 10% of the runtime).
	BidSlack time.Duration
	// PreemptWait: a manager prefers a preempting bid when no other bid
	// starts within this long; 1s.
	PreemptWait time.Duration
	// PreemptMargin is how much higher a task's priority must be than a
	// running task's to evict it; 1.
	PreemptMargin int
	// PreemptGrace is the SIGTERM grace given to evicted tasks; 2s.
	PreemptGrace time.Duration
	// LeaseEvery is how often an executor renews the lease of each task it
	// holds (queued or running) by reporting to its manager; 1s.
	LeaseEvery time.Duration
	// LeaseTimeout is how long a manager waits without a report before the
	// lease lapses and the replica is placed again with a new epoch; 5s.
	LeaseTimeout time.Duration
	// AdoptGrace is how long a node that adopts a job waits before it
	// places the replicas the adopted record shows pending; 3s. The old
	// manager may have awarded some after its last replicated record, and
	// their executors, once they find the new manager, report them (see
	// Market.Adopt); placing them at once would run them twice.
	AdoptGrace time.Duration
	// JobReplicas is how many peers keep a copy of each job record this
	// node manages (r), so that the job survives it: the closest live
	// member of the copy's replica set takes the job over when the
	// manager is gone; 2. Negative: none (a simulation without
	// failures, where no manager is ever lost).
	JobReplicas int
	// ReplicateEvery batches the copies of records that changed; 200ms.
	ReplicateEvery time.Duration
	// ReplicateTries bounds how many batches in a row send again a record
	// that fewer replica peers stored than were asked; 25.
	ReplicateTries int
	// CopyRefresh is how often the copies of an unfinished job's record
	// are sent again though it did not change, so that a holder that
	// restarted holds a copy it may take over again (see ReplicaLoaded);
	// 1m. Negative: never.
	CopyRefresh time.Duration
	// QueryTimeout is how long a question to a peer waits for its answer
	// (who manages a job; how a Replicate batch went); 3s.
	QueryTimeout time.Duration
	// RehomeEvery and RehomeFor pace an executor's search for the new
	// manager of a job whose manager is gone: a round of questions every
	// RehomeEvery, for RehomeFor; 1s and 30s.
	RehomeEvery, RehomeFor time.Duration
	// AdvertInterval is the peers' advert period. After a start (Reclaim)
	// the node waits until its view is worth acting on — an interval and
	// a half, and an interval after the first advert — before it asks
	// about the jobs it holds back or takes over any job; 2s.
	AdvertInterval time.Duration
	// Solo says the node had no peer to join when it started (no
	// bootstrap address, none remembered): after a restart it restores
	// its unfinished jobs once its view would have settled, without
	// waiting for a first advert that cannot come.
	Solo bool
	// Prover signs this node's reports on the replicas it runs and checks
	// the proofs a ManagerClaim carries (proofs.go); a node signs with its
	// identity key. Nil: a digest that proves nothing, for harnesses that
	// model no adversary.
	Prover Prover
	// Trust, when set, is the network's authority and the revocations
	// known at start: the market then runs signed jobs only (see
	// trust.go). The market keeps a copy; Revoked updates it.
	Trust *auth.Book
	// TicketChecks, with Trust, is what the node's goroutines that
	// receive tickets checked of them ahead of the market; nil: the
	// market checks everything itself.
	TicketChecks TicketReader
	// NoSteal turns work stealing off (it is on by default).
	NoSteal bool
	// StealEvery is how often an idle node may ask a loaded peer for
	// work; 500ms.
	StealEvery time.Duration
	// StealBackoffMax bounds the gap between an idle node's requests while
	// they bring nothing (it doubles from StealEvery); 32 × StealEvery.
	StealBackoffMax time.Duration
	// HoldExpiry is how long a gang hold lasts unless committed; 2s.
	HoldExpiry time.Duration
	// GangReserveAfter is how long a gang may wait before it reserves its
	// chosen nodes against new small tasks; 5s.
	GangReserveAfter time.Duration
	// ReserveTTL is how long a gang reservation lasts unless renewed;
	// 30m. It is a last resort: a holder drops a reservation at once when
	// its manager leaves the view or restarts, and a manager releases
	// again one a holder still advertises after its release (gang.go).
	// A waiting gang renews every third of it and backs off to that.
	ReserveTTL time.Duration
	// GangForceEvery: a gang skips its rounds while its view shows too
	// few nodes with room for a replica; after this many skips in a row
	// one round runs anyway (and may reserve nodes, Reserve). Negative,
	// the default: never — rounds run only when the view shows room, and
	// a waiting gang is protected by the head (HeadWidth). Forced rounds
	// reserved servers that then idled: on the synthetic mix at offered
	// 0.9 (hetero:100) 3 kept the GPUs busy 0.545 of the window against
	// 0.738 (docs/scheduling.md, "One configuration for gangs").
	GangForceEvery int
	// HeadWidth: a gang waiting longer than GangReserveAfter becomes a
	// head candidate (head.go) when it needs more than this fraction of
	// the nodes of the view that could hold a replica. Negative, the
	// default: every such gang, narrow or wide, as EASY protects
	// whichever job reaches the front of its queue — so a narrow gang on
	// nodes kept busy by a stream of small tasks starts within seconds
	// without forced rounds. Above 1: none.
	HeadWidth float64
	// HeadAfter: a gang of any width that has waited this long becomes a
	// head candidate too, a starvation bound (EASY protects whichever job
	// reaches the front of its queue); negative: never. Zero means
	// DefaultHeadAfter.
	HeadAfter time.Duration
	// Scorer names the bid scorer, one of Scorers; "weighted".
	Scorer string
	// Scorers are the scorers Scorer may name; DefaultScorers().
	Scorers Registry
	// Weights of the weighted scorer; DefaultWeights.
	Weights Weights
	// Runtime configures the runtime predictor.
	Runtime predict.RuntimeConfig
	// JobRetention is how long a manager keeps a finished job's record
	// before it forgets it (ForgetJob): status queries find the job until
	// then; DefaultJobRetention. Negative: kept forever.
	JobRetention time.Duration
	// TickEvery is how often the caller must call Tick; 10ms (advisory).
	TickEvery time.Duration
	// Seed seeds the market's random source (tie-breaking among equal
	// candidates).
	Seed int64
	// FairShare configures the decentralized fair share (fairshare.go).
	FairShare FairShareConfig
}

// FairShareConfig is the fair share's half-life, how often a node
// publishes its usage summary, and the weights of the multifactor
// priority (docs/scheduling.md, "Fair share").
type FairShareConfig struct {
	// HalfLife of decayed usage; fairshare.DefaultHalfLife (7 days).
	HalfLife time.Duration
	// PublishEvery is the least time between two of this node's usage
	// summaries; 30 s (Slurm recomputes its factors every 5 minutes).
	// A node's own charges order its queue at once. Between full
	// summaries a node sends deltas (the users charged since the last
	// full one); RefreshEvery is how often a full one goes out even
	// unchanged, to make good one a peer missed; 6 h (a peer that
	// joins the view gets one within PublishEvery).
	PublishEvery time.Duration
	RefreshEvery time.Duration
	// Weights of the multifactor priority among tasks of one priority
	// and users of different factors: the fair-share factor, the age
	// (time queued here over MaxAge, at most 1) and the size (1 − the
	// task's share of this node's CPUs). 1, 0.5, 0.1; MaxAge 24 h.
	FairShare, Age, Size float64
	MaxAge               time.Duration
	// GPUBilling is how many core-seconds a GPU-second is charged as; 8.
	GPUBilling float64
}

// DefaultJobRetention is how long a finished job is kept by default: a
// day, long enough for its submitter to read its outcome and logs, short
// enough that a node running millions of jobs does not keep them all.
const DefaultJobRetention = 24 * time.Hour

// Defaults is the configuration a node runs with `agora node`'s default
// flags, less what is the node's own (its ID, site, resources, keys):
// the flags take their defaults from it, and the simulator checks its
// nodes run it (testnet/sim TestSimRunsNodeConfig).
func Defaults() Config { return Config{}.WithDefaults() }

// WithDefaults is c with its zero fields set to their defaults, as New
// runs it.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Prover == nil {
		c.Prover = hashProver{c.Self}
	}
	if c.D <= 0 {
		c.D = 3
	}
	def(&c.BidWindow, 50*time.Millisecond)
	def(&c.MaxBidWindow, 500*time.Millisecond)
	def(&c.AwardTimeout, 2*time.Second)
	def(&c.RetryBase, time.Second)
	def(&c.RetryMax, 30*time.Second)
	def(&c.RoundBackoff, 100*time.Millisecond)
	def(&c.BidSlack, 250*time.Millisecond)
	def(&c.PreemptWait, time.Second)
	def(&c.PreemptGrace, 2*time.Second)
	def(&c.TickEvery, 10*time.Millisecond)
	if c.JobRetention == 0 {
		c.JobRetention = DefaultJobRetention
	}
	def(&c.HoldExpiry, 2*time.Second)
	def(&c.LeaseEvery, time.Second)
	def(&c.StealEvery, 500*time.Millisecond)
	def(&c.StealBackoffMax, 32*c.StealEvery)
	def(&c.LeaseTimeout, 5*time.Second)
	def(&c.AdoptGrace, 3*time.Second)
	def(&c.GangReserveAfter, 5*time.Second)
	def(&c.FairShare.HalfLife, fairshare.DefaultHalfLife)
	def(&c.FairShare.PublishEvery, 30*time.Second)
	def(&c.FairShare.RefreshEvery, 6*time.Hour)
	def(&c.FairShare.MaxAge, 24*time.Hour)
	if c.FairShare.FairShare == 0 && c.FairShare.Age == 0 && c.FairShare.Size == 0 {
		c.FairShare.FairShare, c.FairShare.Age, c.FairShare.Size = 1, 0.5, 0.1
	}
	if c.FairShare.GPUBilling <= 0 {
		c.FairShare.GPUBilling = 8
	}
	if c.JobReplicas == 0 {
		c.JobReplicas = 2
	}
	if c.DataReplicas == 0 {
		c.DataReplicas = DataReplicas
	}
	if c.DataRate <= 0 {
		c.DataRate = 100e6
	}
	def(&c.ReplicateEvery, 200*time.Millisecond)
	if c.CopyRefresh == 0 {
		c.CopyRefresh = time.Minute
	}
	if c.ReplicateTries <= 0 {
		c.ReplicateTries = 25
	}
	def(&c.QueryTimeout, 3*time.Second)
	def(&c.RehomeEvery, time.Second)
	def(&c.RehomeFor, 30*time.Second)
	def(&c.AdvertInterval, 2*time.Second)
	def(&c.ReserveTTL, 30*time.Minute)
	if c.GangForceEvery == 0 {
		c.GangForceEvery = -1
	}
	if c.HeadWidth == 0 {
		c.HeadWidth = -1
	}
	if c.HeadAfter == 0 {
		c.HeadAfter = DefaultHeadAfter
	}
	if c.PreemptMargin <= 0 {
		c.PreemptMargin = 1
	}
	if c.Scorer == "" {
		c.Scorer = "weighted"
	}
	if c.Scorers == nil {
		c.Scorers = DefaultScorers()
	}
	if c.Weights == (Weights{}) {
		c.Weights = DefaultWeights
	}
	return c
}

func (c Config) validate() error {
	if c.Self == "" {
		return fmt.Errorf("market: Config.Self is empty")
	}
	if _, ok := c.Scorers[c.Scorer]; !ok {
		return fmt.Errorf("market: unknown scorer %q (have %v)", c.Scorer, c.Scorers.Names())
	}
	if f := c.FairShare; f.FairShare < 0 || f.Age < 0 || f.Size < 0 {
		return fmt.Errorf("market: fair-share weights must be >= 0, got %g, %g, %g", f.FairShare, f.Age, f.Size)
	}
	w := c.Weights
	if w.Urgency < 0 || w.Match < 0 || w.Efficiency < 0 || w.Urgency+w.Match+w.Efficiency == 0 {
		return fmt.Errorf("market: weights must be >= 0 and not all zero, got %+v", w)
	}
	return nil
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// ConfigDiff names the fields in which a and b differ, for the tests that
// hold a node's configuration and the simulator's to one
// (testnet/sim TestSimRunsNodeConfig, cmd/agora TestNodeFlagsMarketDefaults).
// Functions and interfaces (Holds, Prover, TicketChecks) are the caller's
// adapters and not compared; Scorers compare by their names.
func ConfigDiff(a, b Config) []string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		f := va.Type().Field(i)
		switch {
		case f.Type.Kind() == reflect.Func || f.Type.Kind() == reflect.Interface:
			continue
		case f.Name == "Scorers":
			if !slices.Equal(a.Scorers.Names(), b.Scorers.Names()) {
				out = append(out, f.Name)
			}
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, f.Name)
		}
	}
	return out
}
