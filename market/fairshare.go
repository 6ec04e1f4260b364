package market

import (
	"errors"
	"sort"
	"time"

	"github.com/agora-sched/agora/market/fairshare"
)

// The decentralized fair share (package fairshare; docs/scheduling.md,
// "Fair share"). A contractor charges each attempt that ends here to its
// owner — its CPUs and GPUs over its wall time, in core-seconds — and
// publishes its decayed usage per user (PublishUsage: the node puts it on
// the usage topic, the simulator hands it to every node of the view);
// every node sums its own and the latest summary of each peer, and so
// computes nearly the same factor F = 2^(−U/S) for every user. Among the
// tasks queued here of one priority and of users whose factors differ,
// the contractor starts first the one of the highest multifactor
// priority: weighted F, age and size (Config.FairShare). Tasks of users
// of equal factors — everyone in an open network, where jobs have no
// owner — keep the queue's first-come order.

// RefuseUsage is a usage summary the fair share refused.
const RefuseUsage = "bad_usage"

// usageSkew is how far in the future a peer's summary may be dated.
const usageSkew = 10 * time.Minute

// UsageSummary is a node's decayed usage per user (fairshare.Summary),
// which it publishes to every peer.
type UsageSummary struct{ fairshare.Summary }

func (UsageSummary) msgKind() string  { return "usage_summary" }
func (u UsageSummary) Sender() NodeID { return NodeID(u.Node) }

// PublishUsage asks the caller to publish this node's usage summary to
// every peer (the node: on the usage topic).
type PublishUsage struct{ Summary UsageSummary }

func (PublishUsage) effect() {}

// onUsage keeps a peer's summary, as the fair share allows, and orders
// the queue again by the factors it changes.
func (m *Market) onUsage(from NodeID, s UsageSummary) {
	if err := m.fs.Accept(m.now, string(from), s.Summary); err != nil {
		if !errors.Is(err, fairshare.ErrNoBase) { // not the sender's fault
			m.emit(Refused{Reason: RefuseUsage, From: from})
		}
		return
	}
	m.con.reorder()
	if len(m.con.queue) == 0 && len(m.gang.gangs) == 0 {
		return // the head is computed when needed (headMoved)
	}
	m.con.schedule()
}

// charge bills the owner of contract k, which ran for ran and ended now,
// to the fair share.
func (c *contractor) charge(k *contract, ran time.Duration) {
	owner := k.spec.Owner
	if owner == "" || ran <= 0 {
		return
	}
	amount := ran.Seconds() * (float64(k.spec.Request.CPU)/1000 + float64(len(k.alloc.GPUs))*c.cfg.FairShare.GPUBilling)
	c.fs.Charge(c.now, owner, c.shareOf(k.spec.Key.Job), amount)
	if !c.fsDirty {
		c.fsDirty = true
		c.fsNext = maxTime(c.fsNext, c.now)
	}
	c.reorder()
}

// publishUsage sends this node's summary when usage was charged and the
// least gap since the last one passed: a delta of the users charged
// since the last full summary, or a full one when a peer joined the view
// or RefreshEvery passed since the last (then even with nothing
// charged: a peer that missed it, or a delta, is made good).
func (sh *shared) publishUsage() {
	if at, ok := sh.nextUsage(); !ok || sh.now.Before(at) {
		return
	}
	full := sh.fsFull || !sh.now.Before(sh.fs.FullAt().Add(sh.cfg.FairShare.RefreshEvery))
	s := sh.fs.Summarize(string(sh.cfg.Self), sh.now, full)
	sh.emit(PublishUsage{Summary: UsageSummary{s}})
	sh.fsDirty, sh.fsFull = false, false
	sh.fsNext = sh.now.Add(sh.cfg.FairShare.PublishEvery)
}

// usageNewPeer has this node's full summary go out again (within
// PublishEvery) when a peer joins its view: the peer learns its usage,
// and can apply its deltas, without waiting for the refresh.
func (sh *shared) usageNewPeer() {
	if sh.fs.HasLocal() && !sh.fsFull {
		sh.fsFull = true
		sh.fsNext = maxTime(sh.fsNext, sh.now)
	}
}

// nextUsage is when publishUsage has work: the gap's end while usage or
// a full summary waits to go out, else the refresh.
func (sh *shared) nextUsage() (time.Time, bool) {
	if !sh.fs.HasLocal() {
		return time.Time{}, false
	}
	if sh.fsDirty || sh.fsFull {
		return sh.fsNext, true
	}
	return maxTime(sh.fsNext, sh.fs.FullAt().Add(sh.cfg.FairShare.RefreshEvery)), true
}

// FairShare is user's fair-share factor as this node sees it now (1 for
// no user, or one nobody charged).
func (m *Market) FairShare(user string) float64 { return m.fs.Factor(m.now, user) }

// Usage is every user's decayed usage (core-seconds) as this node knows
// it, as of now.
func (m *Market) Usage(now time.Time) map[string]float64 { return m.fs.Usage(now) }

// ahead orders the queue: priority first; then, between users whose
// fair-share factors differ, the multifactor priority; then the earlier
// deadline; then first come.
func (c *contractor) ahead(a, b *contract) bool {
	if a.spec.Priority != b.spec.Priority {
		return a.spec.Priority > b.spec.Priority
	}
	if a.spec.Owner != b.spec.Owner && c.fs != nil {
		fa, fb := c.fs.Factor(c.now, a.spec.Owner), c.fs.Factor(c.now, b.spec.Owner)
		if fa != fb {
			if pa, pb := c.multifactor(a, fa), c.multifactor(b, fb); pa != pb {
				return pa > pb
			}
		}
	}
	ad, bd := a.spec.Deadline, b.spec.Deadline
	if !ad.Equal(bd) {
		if ad.IsZero() {
			return false
		}
		if bd.IsZero() {
			return true
		}
		return ad.Before(bd)
	}
	return a.seq < b.seq
}

// multifactor is contract k's priority among users' tasks of one
// priority, for its owner's factor f: weighted factor, age queued here
// (over MaxAge, at most 1) and smallness (1 − its share of this node's
// CPUs).
func (c *contractor) multifactor(k *contract, f float64) float64 {
	w := c.cfg.FairShare
	age := min(float64(c.now.Sub(k.accepted))/float64(w.MaxAge), 1)
	size := 0.0
	if cores := c.capacity.CPU; cores > 0 {
		size = 1 - min(float64(k.spec.Request.CPU)/float64(cores), 1)
	}
	return w.FairShare*f + w.Age*max(age, 0) + w.Size*size
}

// reorder sorts the queue again after the factors changed; the caller
// schedules (TaskExited does at its end, after the charge).
func (c *contractor) reorder() {
	if len(c.queue) < 2 || c.fsOrdered == c.fs.Version() {
		return
	}
	c.fsOrdered = c.fs.Version()
	sort.SliceStable(c.queue, func(i, j int) bool { return c.ahead(c.queue[i], c.queue[j]) })
}

// shareOf is the share of job's owner, as the ticket this contractor
// checked says (1 without one).
func (c *contractor) shareOf(job string) float64 {
	if c.tix == nil {
		return 1
	}
	if info := c.tix.byJob[job]; info != nil && info.user.Quota.Share > 0 {
		return float64(info.user.Quota.Share)
	}
	return 1
}

// ownerOf is the owner of job as the ticket this contractor checked
// says ("" in an open network, or before the ticket came).
func (c *contractor) ownerOf(job string) string {
	if c.tix == nil {
		return ""
	}
	if info := c.tix.byJob[job]; info != nil {
		return info.user.Name
	}
	return ""
}

// PriorityFactors are what orders a job's tasks among other users' in
// the contractors' queues: its priority, its owner's fair-share factor
// and decayed usage (core-seconds) as the manager knows them.
type PriorityFactors struct {
	Priority  int     `json:"priority"`
	FairShare float64 `json:"fairshare"`
	Usage     float64 `json:"usage"`
}

// factorsOf are job j's priority factors now, nil for a finished job or
// one without an owner.
func (sh *shared) factorsOf(j *JobRecord) *PriorityFactors {
	if j.Owner == "" || j.State.Terminal() {
		return nil
	}
	return &PriorityFactors{Priority: j.Spec.Priority, FairShare: sh.fs.Factor(sh.now, j.Owner), Usage: sh.fs.UserUsage(sh.now, j.Owner)}
}
