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
func (m *Market) managerGone(id NodeID) {
	for _, job := range m.jobsManagedBy(id) {
		if m.rehome[job] != nil {
			continue
		}
		if !m.c.working(job) {
			m.askOnce(job, id) // only reports it already has: see below
			continue
		}
		m.rehome[job] = &rehoming{old: id, next: m.now, until: m.now.Add(m.cfg.RehomeFor)}
	}
}

// managerRestarted asks, once, whether a peer took over the jobs of
// manager id while it was down.
func (m *Market) managerRestarted(id NodeID) {
	for _, job := range m.jobsManagedBy(id) {
		m.askOnce(job, id)
	}
}

// askOnce asks the peers closest to job, once, whether one manages it
// now. It serves jobs this node holds nothing of but final reports its
// manager acknowledged (kept in case a peer adopts the job from a copy
// that predates them): the job may well have finished, and nobody would
// ever answer a long search.
func (m *Market) askOnce(job string, old NodeID) {
	r := &rehoming{old: old, until: m.now.Add(m.cfg.QueryTimeout)}
	m.rehome[job] = r
	m.askManager(job, r, m.closestPeers(job, m.reclaimAsk(), old))
}

// jobsManagedBy lists, sorted, the jobs with tasks here whose manager is
// id.
func (m *Market) jobsManagedBy(id NodeID) []string {
	var out []string
	for job, mgr := range m.managersOf() {
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
func (m *Market) reclaimAsk() int { return 2 * max(m.cfg.JobReplicas, 1) }

// rehomeDue runs the searches' rounds that are due and ends those that
// ran out or whose tasks are gone from here.
func (m *Market) rehomeDue() {
	if len(m.rehome) == 0 {
		return
	}
	managers := m.managersOf()
	jobs := make([]string, 0, len(m.rehome))
	for job := range m.rehome {
		jobs = append(jobs, job)
	}
	sort.Strings(jobs)
	for _, job := range jobs {
		r := m.rehome[job]
		if _, held := managers[job]; !held || !m.now.Before(r.until) {
			delete(m.rehome, job)
			continue
		}
		if r.next.IsZero() || m.now.Before(r.next) {
			continue
		}
		n := m.reclaimAsk()
		if r.round%everyFifth == everyFifth-1 {
			n = -1
		}
		m.askManager(job, r, m.closestPeers(job, n, r.old))
		r.next = m.now.Add(m.cfg.RehomeEvery)
	}
}

// askManager sends a round of questions about job's manager to peers.
func (m *Market) askManager(job string, r *rehoming, peers []NodeID) {
	r.round++
	for _, p := range peers {
		m.send(p, ManagerQuery{Job: job, From: m.cfg.Self})
	}
}

// nextRehome is when rehomeDue next has work; ok is false for never.
func (m *Market) nextRehome() (at time.Time, ok bool) {
	for _, r := range m.rehome {
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
func (m *Market) onManagerQuery(q ManagerQuery) {
	j := m.jobs[q.Job]
	m.send(q.From, ManagerAnswer{Job: q.Job, From: m.cfg.Self, Manages: j != nil && j.Manager == m.cfg.Self})
}

// onManagerAnswer takes an answer to a search (the tasks report to its
// sender from now on) or to a restarted manager's question (reclaim.go).
func (m *Market) onManagerAnswer(a ManagerAnswer) {
	m.reclaimAnswer(a)
	if !a.Manages {
		delete(m.claims, claimKey{a.Job, a.From}) // a claim went to a node that does not manage the job
		if a.Successor != "" {
			m.managerYielded(a)
			if j := m.jobs[a.Job]; j != nil && a.Successor != m.cfg.Self && m.Live(a.Successor) {
				// Another node manages the job too — the one a manager
				// that gave it up yielded to, or a second manager whose
				// copies a holder saw: this node must meet it (split.go).
				// A claim is judged by its receiver, so the word needs
				// no trust.
				m.claim(a.Successor, j, false)
			}
		}
	}
	r := m.rehome[a.Job]
	if r == nil || !a.Manages || a.From == r.old {
		return
	}
	delete(m.rehome, a.Job)
	m.rehomeTo(a.Job, a.From)
}

// managerYielded starts a search for the new manager of a job whose
// manager — the node this node's tasks of the job report to, and no
// other — says it gave the job up to a.Successor (split.go): that node
// is asked first. Its word is not taken for it: the tasks re-home once
// the successor answers that it manages the job.
func (m *Market) managerYielded(a ManagerAnswer) {
	if mgr, ok := m.managersOf()[a.Job]; !ok || mgr != a.From || a.Successor == a.From {
		return
	}
	if a.Successor == m.cfg.Self {
		if j := m.jobs[a.Job]; j != nil && j.Manager == m.cfg.Self {
			delete(m.rehome, a.Job)
			m.rehomeTo(a.Job, m.cfg.Self)
		}
		return
	}
	r := m.rehome[a.Job]
	if r == nil || r.old != a.From {
		r = &rehoming{old: a.From, until: m.now.Add(m.cfg.RehomeFor)}
		m.rehome[a.Job] = r
	}
	r.next = m.now.Add(m.cfg.RehomeEvery)
	peers := []NodeID{a.Successor}
	for _, p := range m.closestPeers(a.Job, m.reclaimAsk(), a.From) {
		if p != a.Successor {
			peers = append(peers, p)
		}
	}
	m.askManager(a.Job, r, peers)
}

// rehomeTo makes this node's contractor report the tasks of job to a new
// manager (after a failover), renewing their leases at once.
func (m *Market) rehomeTo(job string, manager NodeID) {
	c := &m.c
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
			r.to, r.next, r.acked = manager, m.now, false // the new manager has not seen it
			c.resultsDue = m.now
			moved++
		}
	}
	if moved > 0 {
		m.lastBeat = time.Time{}
		m.heartbeat()
		m.repeatResults()
		m.event(job, fmt.Sprintf("now reporting %d task(s) to manager %s", moved, manager))
	}
}

// managersOf lists the distinct managers of the tasks this node holds
// (queued, running, held, or with a final report still being repeated),
// by job.
func (m *Market) managersOf() map[string]NodeID {
	c := &m.c
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

// working reports whether the contractor holds work of job: a task
// queued, running or held, or a final report its manager has not
// acknowledged.
func (c *contractor) working(job string) bool {
	for _, k := range c.running {
		if k.spec.Key.Job == job {
			return true
		}
	}
	for _, k := range c.queue {
		if k.spec.Key.Job == job {
			return true
		}
	}
	for _, h := range c.holds {
		if h.k.spec.Key.Job == job {
			return true
		}
	}
	for _, r := range c.results {
		if r.st.Key.Job == job && !r.acked {
			return true
		}
	}
	return false
}
