package market

import (
	"container/heap"
	"slices"
	"sort"
	"time"
)

// Failover: this node as the holder of copies of other managers' job
// records. The caller stores each copy a manager pushes (after
// CheckReplica) and tells the market with ReplicaStored, at start for
// every copy it kept. When a job's manager is gone from the view, the
// closest live member of the copy's replica set takes the job over
// (adopt): every holder decides alone, from its own view, and all reach
// the same answer while their views agree. A job whose copy shows it
// finished is kept a retention (Config.JobRetention), then dropped
// (DropReplica).
//
// Nothing is taken over before the view has settled after a start (see
// Reclaim): right after a restart the view is empty, and every manager
// would look gone. Nor is a copy taken over until its manager has been
// silent, since it pushed the copy, for as long as the view waits for a
// silent peer and a lease more (lifeSign): the push says it was alive
// then, though its adverts may not have reached this node for a while (a
// peer that relayed them left, the machine is loaded, the manager's
// process stood still), and a node that took a live manager's job would
// run its tasks again.

// heldCopy is an unfinished job's record this node holds for its manager.
type heldCopy struct {
	rec   JobRecord
	peers []NodeID // the record's replica set
	// loaded says the copy was found in the store at start and its
	// manager has not sent it again since: it may be stale (the manager
	// moved its copies elsewhere while this node was down), so it is not
	// taken over.
	loaded bool
	// pushed is when the manager last sent the copy; zero for a copy
	// loaded at start.
	pushed time.Time
}

// copies is the state of the copies this node holds.
type copies struct {
	open map[string]*heldCopy // unfinished jobs, by ID
	done doneCopies           // finished jobs, by finish time
	// recheck is when a copy whose manager is out of the view but pushed
	// it lately is considered again; zero: none.
	recheck time.Time
	// manager is, per job a copy of which this node holds, the manager
	// that last pushed one.
	manager map[string]NodeID
}

// lifeSign is how long a copy's push counts as a sign of its manager's
// life: as long as the view waits for an advert before it takes a silent
// peer for gone (gossip.DefaultMisses intervals), and a lease more. A
// manager whose process stood still for the view's wait alone (CI's load
// stalled one for 6 s; a laptop's lid, a VM's migration) comes back to
// find its job adopted and the tasks it ran itself placed again; the
// lease more lets a pause up to 11 s (shipped intervals) pass unadopted,
// for a dead manager's jobs taken over 5 s later.
func (sh *shared) lifeSign() time.Duration { return 3*sh.cfg.AdvertInterval + sh.cfg.LeaseTimeout }

// ReplicaStored tells the market that this node holds a copy of rec, with
// its replica set, for rec's manager: the caller stored it (a manager
// pushed it, or the node found it in its store at start). A copy of an
// unfinished job is taken over if its manager is gone; a finished one is
// dropped a retention after the job finished. A record whose replica set
// does not hold this node tells it to drop its copy (the caller deletes
// it): the manager's copies moved to other peers. A copy of a job this
// node manages itself is dropped, and its sender asked to settle which of
// the two managers keeps the job (split.go).
func (m *Market) ReplicaStored(now time.Time, rec JobRecord, peers []NodeID) {
	m.enter(now)
	defer m.leave()
	if j := m.jobs[rec.ID]; j != nil && rec.Manager != m.cfg.Self {
		m.emit(DropReplica{Job: rec.ID})
		m.sp.claim(rec.Manager, j, false)
		return
	}
	if prev, ok := m.fo.copies.manager[rec.ID]; ok && prev != rec.Manager && prev != m.cfg.Self && m.live(prev) && m.live(rec.Manager) {
		// Two live managers push copies of one job: a cut split them and
		// they have not met (one took the job over from a copy of a
		// record the other's rival gave up, say). Each is told of the
		// other and claims the job from it (split.go); the claim is
		// judged by its receiver, so the hint needs no trust.
		m.send(rec.Manager, ManagerAnswer{Job: rec.ID, From: m.cfg.Self, Successor: prev})
		m.send(prev, ManagerAnswer{Job: rec.ID, From: m.cfg.Self, Successor: rec.Manager})
	}
	if m.fo.copies.manager == nil {
		m.fo.copies.manager = map[string]NodeID{}
	}
	m.fo.copies.manager[rec.ID] = rec.Manager
	m.fo.storeCopy(rec, peers, false)
}

// ReplicaLoaded tells the market of a copy of rec this node found in its
// store at start. It is kept as ReplicaStored keeps one, but not taken
// over until its manager sends it again (every Config.CopyRefresh while
// the job runs): while this node was down the manager may have moved its
// copies to other peers, and this one may be stale.
func (m *Market) ReplicaLoaded(now time.Time, rec JobRecord, peers []NodeID) {
	m.enter(now)
	defer m.leave()
	m.fo.storeCopy(rec, peers, true)
}

func (fo *failover) storeCopy(rec JobRecord, peers []NodeID, loaded bool) {
	if fo.copies.open == nil {
		fo.copies.open = map[string]*heldCopy{}
	}
	if !slices.Contains(peers, fo.cfg.Self) {
		delete(fo.copies.open, rec.ID) // the manager moved its copies elsewhere
		delete(fo.copies.manager, rec.ID)
		return
	}
	if rec.State.Terminal() {
		delete(fo.copies.open, rec.ID)
		if fo.cfg.JobRetention >= 0 {
			at := rec.Finished
			if at.IsZero() {
				at = fo.now
			}
			heap.Push(&fo.copies.done, doneCopy{at: at, job: rec.ID})
		}
		return
	}
	c := &heldCopy{rec: rec, peers: peers, loaded: loaded}
	if !loaded {
		c.pushed = fo.now
	}
	fo.copies.open[rec.ID] = c
	fo.considerAdopt(rec.ID)
}

// replicaPeerGone checks, when peer id left the view, the copies whose
// manager it was or whose replica set it was in: this node may now be the
// closest live member of a set whose manager is gone.
func (fo *failover) replicaPeerGone(id NodeID) {
	var ids []string
	for job, c := range fo.copies.open {
		if c.rec.Manager == id || slices.Contains(c.peers, id) {
			ids = append(ids, job)
		}
	}
	sort.Strings(ids)
	for _, job := range ids {
		fo.considerAdopt(job)
	}
}

// considerAdopt takes job over if its manager is gone and this node is
// the closest live member of its copy's replica set.
func (fo *failover) considerAdopt(job string) {
	c := fo.copies.open[job]
	if c == nil || c.loaded || !fo.settled() || fo.live(c.rec.Manager) {
		return
	}
	if fo.jobs[job] != nil { // managed here already
		delete(fo.copies.open, job)
		fo.emit(DropReplica{Job: job})
		return
	}
	if at := c.pushed.Add(fo.lifeSign()); !c.pushed.IsZero() && fo.now.Before(at) {
		if fo.copies.recheck.IsZero() || at.Before(fo.copies.recheck) {
			fo.copies.recheck = at
		}
		return
	}
	for _, p := range Closest(job, c.peers, -1) {
		if !fo.live(p) {
			continue
		}
		if p == fo.cfg.Self {
			delete(fo.copies.open, job)
			delete(fo.copies.manager, job)
			fo.adopt(c.rec)
			fo.emit(DropReplica{Job: job})
		}
		return
	}
}

// adoptSettled considers every copy held, once the view has settled.
func (fo *failover) adoptSettled() {
	ids := make([]string, 0, len(fo.copies.open))
	for id := range fo.copies.open {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fo.considerAdopt(id)
	}
}

// recheckCopies considers again, once due, the copies whose adoption
// waited for a sign of life of their manager to age.
func (fo *failover) recheckCopies() {
	if fo.copies.recheck.IsZero() || fo.now.Before(fo.copies.recheck) {
		return
	}
	fo.copies.recheck = time.Time{}
	fo.adoptSettled()
}

// expireCopies drops the copies of jobs that finished a retention ago.
func (fo *failover) expireCopies() {
	if fo.cfg.JobRetention < 0 {
		return
	}
	for len(fo.copies.done) > 0 && !fo.copies.done[0].at.Add(fo.cfg.JobRetention).After(fo.now) {
		d := heap.Pop(&fo.copies.done).(doneCopy)
		if fo.copies.open[d.job] == nil { // not unfinished again
			fo.emit(DropReplica{Job: d.job, Expired: true})
			delete(fo.copies.manager, d.job)
		}
	}
}

// nextExpiry is when expireCopies next has work; ok is false for never.
func (fo *failover) nextExpiry() (time.Time, bool) {
	if fo.cfg.JobRetention < 0 || len(fo.copies.done) == 0 {
		return time.Time{}, false
	}
	return fo.copies.done[0].at.Add(fo.cfg.JobRetention), true
}

// doneCopy is a finished job's copy waiting out the retention.
type doneCopy struct {
	at  time.Time // the job's Finished
	job string
}

// doneCopies orders finished copies by finish time, earliest first.
type doneCopies []doneCopy

func (h doneCopies) Len() int { return len(h) }
func (h doneCopies) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].job < h[j].job
}
func (h doneCopies) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *doneCopies) Push(x any)   { *h = append(*h, x.(doneCopy)) }
func (h *doneCopies) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = doneCopy{}
	*h = old[:len(old)-1]
	return x
}
