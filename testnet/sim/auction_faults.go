package sim

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/sim/metrics"
)

type taskRecord = metrics.TaskRecord

// What the market nodes do when a node fails, restarts, joins or leaves.
// Everything goes through the real market API, in the order the real node
// (package node) calls it:
//
//   - A node that fails loses its running tasks and everything on its way
//     to it, and sends nothing until it restarts. What the real node
//     persists survives: every SaveJob record (Badger's jobs bucket) and
//     its runtime history (saved every 5 s; here at the failure).
//   - Its peers notice when their views drop it (Config.GoneAfter):
//     every live node gets market.PeerGone, so the managers of the tasks
//     it ran place them again; and each of its unfinished jobs is adopted
//     (market.Adopt) from its record by the live node of its view closest
//     to the job ID by XOR of SHA-256 (node/failover.go: the closest live
//     member of the record's replica set), whereupon every executor of a
//     task of that job moves it to the new manager (market.Rehome).
//   - On restart it builds a new market, restores its history and its job
//     records (market.RestoreHistory, market.Restore), hears its peers'
//     adverts and advertises itself. An unfinished job a live peer took
//     over while it was down is not restored, and its record is deleted:
//     the real node asks the peers closest to the job ID before restoring
//     it (node/reclaim.go), here the answer comes at once. Executors
//     already report to the adopter (they moved at the adoption). Any run
//     of a replica started while another is in flight, or after one
//     succeeded, is counted (Faults.DuplicateRuns).
//   - A node back before its peers dropped it is seen with a new boot
//     counter: they call PeerGone at once, and nobody adopts its jobs.
//   - A joining node hears its peers' adverts and advertises itself.
//   - A leaving node drains (market.Drain) and leaves when it holds no
//     task or after drainTimeout; its peers drop it at once (its leaving
//     advert) and its jobs are adopted as a failed node's are.

// recordStart records a run's start on its task record when failures may
// run a replica more than once: the record keeps its first start until
// a run succeeds. A run started while another run of the replica is in
// flight, or after it finished, is a duplicate (two managers placed it:
// see restart).
func (a *auctionSched) recordStart(k market.TaskKey, t *taskRecord, r *runningTask) {
	e := a.e
	if t.Finished || a.inflight[k] > 0 {
		r.dup = true
		e.stats.dupRuns++
	}
	a.inflight[k]++
	if !t.Started && !t.Finished {
		t.Start, t.Started = e.now, true
	}
}

// recordEnd records the end of a run; it reports whether the run is the
// replica's first success (the one its record and prediction keep).
func (a *auctionSched) recordEnd(k market.TaskKey, t *taskRecord, r *runningTask, success bool) bool {
	e := a.e
	if a.inflight[k]--; a.inflight[k] <= 0 {
		delete(a.inflight, k)
	}
	if success {
		if t.Finished {
			return false // a duplicate finished second
		}
		t.Start, t.Finish, t.Started, t.Finished = r.start, e.now, true, true
		return true
	}
	if !t.Finished && a.inflight[k] == 0 {
		t.Started = false
	}
	return false
}

// working is the first working node after i, or -1.
func (a *auctionSched) working(i int) int {
	n := len(a.markets)
	for k := 1; k < n; k++ {
		if j := (i + k) % n; a.e.state[j] == stUp {
			return j
		}
	}
	return -1
}

// dropNode ends node i's life: its running tasks are lost, its pending
// tick is cancelled and its market is gone.
func (a *auctionSched) dropNode(i int) {
	e := a.e
	keys := make([]market.TaskKey, 0, len(a.running[i]))
	for k := range a.running[i] {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y market.TaskKey) int { return cmpKeys(x, y) })
	for _, k := range keys {
		r := a.running[i][k]
		e.running--
		if !r.stopping || r.drained {
			e.stats.restarted++
			e.stats.lostWork += e.now - r.start
		}
		delete(a.pending, predKey{k, r.epoch})
		if t := e.task(k); t != nil {
			a.recordEnd(k, t, r, false)
		}
	}
	a.running[i] = map[market.TaskKey]*runningTask{}
	a.markets[i] = nil
	a.tickAt[i] = -1
	a.gen++
	a.tickGen[i] = a.gen // a pending tick is stale
}

func cmpKeys(x, y market.TaskKey) int {
	if x.Job != y.Job {
		if x.Job < y.Job {
			return -1
		}
		return 1
	}
	if x.Task != y.Task {
		if x.Task < y.Task {
			return -1
		}
		return 1
	}
	return x.Replica - y.Replica
}

func (a *auctionSched) crash(i int) {
	a.hist[i] = a.markets[i].History()
	a.dropNode(i)
}

// feedView gives node i's new market the adverts of the live peers it
// watches, as their next adverts would within an interval.
func (a *auctionSched) feedView(i int) {
	now := a.now()
	m := a.markets[i]
	for _, j := range a.view[i] {
		if a.e.alive(j) && a.lastAdv[j].ID != "" {
			m.Advert(now, a.lastAdv[j])
		}
	}
}

func (a *auctionSched) restart(i int) {
	e := a.e
	mc := a.mcfg[i]
	mc.Seed ^= int64(e.boot[i]) << 40
	m, err := market.New(mc)
	if err != nil {
		panic(fmt.Sprintf("sim: restart %s: %v", e.nodes[i].id, err))
	}
	if h := a.hist[i]; len(h) > 0 {
		m.RestoreHistory(h)
	}
	recs := make([]market.JobRecord, 0, len(a.saved[i]))
	for _, r := range a.saved[i] {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(x, y market.JobRecord) int { return cmpStr(x.ID, y.ID) })
	recs = a.reclaim(i, recs)
	a.markets[i] = m
	now := a.now()
	m.Restore(now, recs)
	a.feedView(i)
	a.last[i] = advertSum{queue: -1}
	a.touch(i)
	a.drain(i)
}

// reclaim drops from restarting node i's records the unfinished jobs a
// live peer manages now (and deletes them from its store), and notes i as
// the manager of the rest.
func (a *auctionSched) reclaim(i int, recs []market.JobRecord) []market.JobRecord {
	e := a.e
	keep := recs[:0]
	for _, r := range recs {
		if r.State.Terminal() {
			keep = append(keep, r)
			continue
		}
		if j, ok := a.managerOf[r.ID]; ok && j != i && e.alive(j) && a.markets[j] != nil {
			if cur, ok := a.markets[j].Job(r.ID); ok && cur.Manager == e.nodes[j].id {
				delete(a.saved[i], r.ID)
				continue
			}
		}
		if _, moved := a.managerOf[r.ID]; moved {
			a.managerOf[r.ID] = i
		}
		keep = append(keep, r)
	}
	return keep
}

func cmpStr(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func (a *auctionSched) join(i int) {
	a.feedView(i)
	a.touch(i)
	a.drain(i)
}

func (a *auctionSched) leave(i int) {
	a.markets[i].Drain(a.now())
	a.drain(i)
	a.leftIfIdle(i)
}

// leftIfIdle completes leaving node i's leave once it holds no task.
func (a *auctionSched) leftIfIdle(i int) {
	if a.markets[i] != nil && a.markets[i].Idle() && len(a.running[i]) == 0 {
		a.dropNode(i)
		a.e.left(a, i)
	}
}

func (a *auctionSched) drained(i int) {
	a.dropNode(i)
	a.e.left(a, i)
}

func (a *auctionSched) gone(i int, adopt bool) {
	e := a.e
	now := a.now()
	id := e.nodes[i].id
	for j := range a.markets {
		if j == i || !e.alive(j) {
			continue
		}
		a.markets[j].PeerGone(now, id)
		a.drain(j)
	}
	if adopt {
		a.adopt(i)
	}
}

// adopt hands node i's unfinished jobs to their record replicas and
// re-homes their executors' tasks.
func (a *auctionSched) adopt(i int) {
	e := a.e
	id := e.nodes[i].id
	var recs []market.JobRecord
	for _, r := range a.saved[i] {
		if !r.State.Terminal() && r.Manager == id {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		return
	}
	slices.SortFunc(recs, func(x, y market.JobRecord) int { return cmpStr(x.ID, y.ID) })
	now := a.now()
	adopter := map[string]int{}
	touched := map[int]bool{}
	for _, r := range recs {
		j := a.closest(r.ID, i)
		if j < 0 {
			continue // no live replica: the job waits for its manager
		}
		a.markets[j].Adopt(now, r)
		adopter[r.ID] = j
		a.managerOf[r.ID] = j
		touched[j] = true
	}
	for j, m := range a.markets {
		if !e.alive(j) {
			continue
		}
		mo := m.ManagersOf()
		jobs := make([]string, 0, len(mo))
		for job, mgr := range mo {
			if _, ok := adopter[job]; ok && mgr == id {
				jobs = append(jobs, job)
			}
		}
		slices.Sort(jobs)
		for _, job := range jobs {
			m.Rehome(now, job, e.nodes[adopter[job]].id)
			touched[j] = true
		}
	}
	for _, j := range sortedInts(touched) {
		a.drain(j)
	}
}

// closest is the live node of i's view closest to job by XOR of SHA-256
// digests (node/failover.go's replica placement), or -1.
func (a *auctionSched) closest(job string, i int) int {
	e := a.e
	if a.idHash == nil {
		a.idHash = make([][32]byte, len(e.nodes))
		for j, nd := range e.nodes {
			a.idHash[j] = sha256.Sum256([]byte(nd.id))
		}
	}
	k := sha256.Sum256([]byte(job))
	best := -1
	var bd [32]byte
	for _, j := range a.view[i] {
		if !e.alive(j) {
			continue
		}
		d := a.idHash[j]
		for x := range d {
			d[x] ^= k[x]
		}
		if best < 0 || bytes.Compare(d[:], bd[:]) < 0 {
			best, bd = j, d
		}
	}
	return best
}
