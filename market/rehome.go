package market

import (
	"fmt"
	"sort"
	"time"
)

// Executors of a job whose manager is gone, or restarted, look for the
// node that manages it now, and report to it from then on (rehome). They
// cannot tell who took the job over — the replica set travels only with
// the record — so they ask: a ManagerQuery to the peers closest to the job
// ID (its record's copies went there), every peer of the view on every
// fifth round, every RehomeEvery for RehomeFor. A peer that answers that
// it manages the job is the new manager. After a manager restart the
// executor asks once, the closest peers but the restarted one: a peer may
// have taken the job over while it was down, and then the restarted node
// gave the job up (Reclaim) and would ignore this node's reports. No
// answer means nobody did, and the tasks keep reporting where they did.

// rehoming is an executor's search for the new manager of one job.
type rehoming struct {
	old   NodeID    // the manager that is gone or restarted
	next  time.Time // the next round of questions; zero: none
	until time.Time // when the search ends
	round int
}

// everyFifth is how often, in rounds, a search asks every peer.
const everyFifth = 5

// managerGone starts the search for the new manager of the jobs whose
// tasks this node holds and whose manager id left the view.
func (fo *failover) managerGone(id NodeID) {
	for _, job := range fo.jobsManagedBy(id) {
		if fo.rehome[job] != nil {
			continue
		}
		if !fo.con.working(job) {
			fo.askOnce(job, id) // only reports it already has: see below
			continue
		}
		fo.rehome[job] = &rehoming{old: id, next: fo.now, until: fo.now.Add(fo.cfg.RehomeFor)}
	}
}

// managerRestarted asks, once, whether a peer took over the jobs of
// manager id while it was down.
func (fo *failover) managerRestarted(id NodeID) {
	for _, job := range fo.jobsManagedBy(id) {
		fo.askOnce(job, id)
	}
}

// askOnce asks the peers closest to job, once, whether one manages it
// now. It serves jobs this node holds nothing of but final reports its
// manager acknowledged (kept in case a peer adopts the job from a copy
// that predates them): the job may well have finished, and nobody would
// ever answer a long search.
func (fo *failover) askOnce(job string, old NodeID) {
	r := &rehoming{old: old, until: fo.now.Add(fo.cfg.QueryTimeout)}
	fo.rehome[job] = r
	fo.askManager(job, r, fo.closestPeers(job, fo.reclaimAsk(), old))
}

// jobsManagedBy lists, sorted, the jobs with tasks here whose manager is
// id.
func (fo *failover) jobsManagedBy(id NodeID) []string {
	var out []string
	for job, mgr := range fo.managersOf() {
		if mgr == id {
			out = append(out, job)
		}
	}
	sort.Strings(out)
	return out
}

// reclaimAsk is how many of the peers closest to a job ID are asked who
// manages it: its record's copies went to the JobReplicas closest peers
// of its manager's view, which may have gained or lost a few since.
func (fo *failover) reclaimAsk() int { return 2 * max(fo.cfg.JobReplicas, 1) }

// rehomeDue runs the searches' rounds that are due and ends those that
// ran out or whose tasks are gone from here.
func (fo *failover) rehomeDue() {
	if len(fo.rehome) == 0 {
		return
	}
	managers := fo.managersOf()
	jobs := make([]string, 0, len(fo.rehome))
	for job := range fo.rehome {
		jobs = append(jobs, job)
	}
	sort.Strings(jobs)
	for _, job := range jobs {
		r := fo.rehome[job]
		if _, held := managers[job]; !held || !fo.now.Before(r.until) {
			delete(fo.rehome, job)
			continue
		}
		if r.next.IsZero() || fo.now.Before(r.next) {
			continue
		}
		n := fo.reclaimAsk()
		if r.round%everyFifth == everyFifth-1 {
			n = -1
		}
		fo.askManager(job, r, fo.closestPeers(job, n, r.old))
		r.next = fo.now.Add(fo.cfg.RehomeEvery)
	}
}

// askManager sends a round of questions about job's manager to peers.
func (fo *failover) askManager(job string, r *rehoming, peers []NodeID) {
	r.round++
	for _, p := range peers {
		fo.send(p, ManagerQuery{Job: job, From: fo.cfg.Self})
	}
}

// nextRehome is when rehomeDue next has work; ok is false for never.
func (fo *failover) nextRehome() (at time.Time, ok bool) {
	for _, r := range fo.rehome {
		t := r.until
		if !r.next.IsZero() && r.next.Before(t) {
			t = r.next
		}
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// onManagerQuery answers whether this node manages the job now. A job
// held back after a restart (Reclaim) is not managed yet.
func (fo *failover) onManagerQuery(q ManagerQuery) {
	j := fo.jobs[q.Job]
	fo.send(q.From, ManagerAnswer{Job: q.Job, From: fo.cfg.Self, Manages: j != nil && j.Manager == fo.cfg.Self})
}

// onManagerAnswer takes an answer to a search (the tasks report to its
// sender from now on) or to a restarted manager's question (reclaim.go).
func (fo *failover) onManagerAnswer(a ManagerAnswer) {
	fo.reclaimAnswer(a)
	if !a.Manages {
		delete(fo.sp.claims, claimKey{a.Job, a.From}) // a claim went to a node that does not manage the job
		if a.Successor != "" {
			fo.managerYielded(a)
			if j := fo.jobs[a.Job]; j != nil && a.Successor != fo.cfg.Self && fo.live(a.Successor) {
				// Another node manages the job too — the one a manager
				// that gave it up yielded to, or a second manager whose
				// copies a holder saw: this node must meet it (split.go).
				// A claim is judged by its receiver, so the word needs
				// no trust.
				fo.sp.claim(a.Successor, j, false)
			}
		}
	}
	r := fo.rehome[a.Job]
	if r == nil || !a.Manages || a.From == r.old {
		return
	}
	delete(fo.rehome, a.Job)
	fo.rehomeTo(a.Job, a.From)
}

// managerYielded starts a search for the new manager of a job whose
// manager — the node this node's tasks of the job report to, and no
// other — says it gave the job up to a.Successor (split.go): that node
// is asked first. Its word is not taken for it: the tasks re-home once
// the successor answers that it manages the job.
func (fo *failover) managerYielded(a ManagerAnswer) {
	if mgr, ok := fo.managersOf()[a.Job]; !ok || mgr != a.From || a.Successor == a.From {
		return
	}
	if a.Successor == fo.cfg.Self {
		if j := fo.jobs[a.Job]; j != nil && j.Manager == fo.cfg.Self {
			delete(fo.rehome, a.Job)
			fo.rehomeTo(a.Job, fo.cfg.Self)
		}
		return
	}
	r := fo.rehome[a.Job]
	if r == nil || r.old != a.From {
		r = &rehoming{old: a.From, until: fo.now.Add(fo.cfg.RehomeFor)}
		fo.rehome[a.Job] = r
	}
	r.next = fo.now.Add(fo.cfg.RehomeEvery)
	peers := []NodeID{a.Successor}
	for _, p := range fo.closestPeers(a.Job, fo.reclaimAsk(), a.From) {
		if p != a.Successor {
			peers = append(peers, p)
		}
	}
	fo.askManager(a.Job, r, peers)
}

// rehomeTo makes this node's contractor report the tasks of job to a new
// manager (after a failover), renewing their leases at once.
func (fo *failover) rehomeTo(job string, manager NodeID) {
	c := fo.con
	moved := 0
	re := func(k *contract) {
		if k.spec.Key.Job == job && k.manager != manager {
			k.manager, k.beat = manager, time.Time{}
			moved++
		}
	}
	for _, k := range c.running {
		re(k)
	}
	for _, k := range c.queue {
		re(k)
	}
	for _, h := range c.holds {
		re(h.k)
	}
	for _, r := range c.results {
		if r.st.Key.Job == job {
			r.to, r.next, r.acked = manager, fo.now, false // the new manager has not seen it
			c.resultsDue = fo.now
			moved++
		}
	}
	if moved > 0 {
		fo.con.lastBeat = time.Time{}
		fo.con.heartbeat()
		fo.con.repeatResults()
		fo.event(job, fmt.Sprintf("now reporting %d task(s) to manager %s", moved, manager))
	}
}

// managersOf lists the distinct managers of the tasks this node holds
// (queued, running, held, or with a final report still being repeated),
// by job.
func (fo *failover) managersOf() map[string]NodeID {
	c := fo.con
	out := map[string]NodeID{}
	for _, k := range c.running {
		out[k.spec.Key.Job] = k.manager
	}
	for _, k := range c.queue {
		out[k.spec.Key.Job] = k.manager
	}
	for _, h := range c.holds {
		out[h.k.spec.Key.Job] = h.k.manager
	}
	for _, r := range c.results {
		out[r.st.Key.Job] = r.to
	}
	return out
}
