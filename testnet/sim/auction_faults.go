package sim

import (
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/cluster"
	"github.com/agora-sched/agora/testnet/sim/metrics"
)

type taskRecord = metrics.TaskRecord

// What the auction's nodes go through when they fail, restart, join and
// leave is market/cluster's (its faults.go): crashes lose running tasks
// and messages in flight but not what a node persists; peers drop a
// failed node after Config.GoneAfter (market.PeerGone), whereupon the
// markets place its tasks again and the live holders of its job records'
// copies take its jobs over, and executors find the adopters; a restarted
// node reclaims its jobs as a real one does, asking its peers first, and
// a node back before its peers dropped it is known by its new boot
// counter. The engine decides when each fault happens (faults.go); this
// file records what the metrics count: any run of a replica started while
// another is in flight, or after one succeeded, is a duplicate
// (Faults.DuplicateRuns).

// recordStart records a run's start on its task record when failures may
// run a replica more than once: the record keeps its first start until
// a run succeeds. A run started while another run of the replica is in
// flight, or after it finished, is a duplicate (two managers placed it).
func (a *auctionSched) recordStart(k market.TaskKey, t *taskRecord) {
	e := a.e
	if t.Finished || a.inflight[k] > 0 {
		e.stats.dupRuns++
	}
	a.inflight[k]++
	if !t.Started && !t.Finished {
		t.Start, t.Started = e.now, true
	}
}

// recordEnd records the end of a run; it reports whether the run is the
// replica's first success (the one its record and prediction keep).
func (a *auctionSched) recordEnd(k market.TaskKey, t *taskRecord, r *cluster.Run, success bool) bool {
	e := a.e
	if a.inflight[k]--; a.inflight[k] <= 0 {
		delete(a.inflight, k)
	}
	if success {
		if t.Finished {
			return false // a duplicate finished second
		}
		t.Start, t.Finish, t.Started, t.Finished = r.Start, e.now, true, true
		return true
	}
	if !t.Finished && a.inflight[k] == 0 {
		t.Started = false
	}
	return false
}

// working is the first working node after i, or -1.
func (a *auctionSched) working(i int) int {
	n := a.cl.N()
	for k := 1; k < n; k++ {
		if j := (i + k) % n; a.e.state[j] == stUp {
			return j
		}
	}
	return -1
}

func (a *auctionSched) crash(i int)   { a.cl.Crash(i) }
func (a *auctionSched) join(i int)    { a.cl.Join(i) }
func (a *auctionSched) leave(i int)   { a.cl.Leave(i) }
func (a *auctionSched) drained(i int) { a.cl.Drained(i) }

func (a *auctionSched) restart(i int) {
	if err := a.cl.Restart(i); err != nil {
		panic(err) // the engine restarts only nodes it saw fail
	}
}

// gone tells the nodes that node i is gone. A node back before its peers
// dropped it (adopt false) is not: its restart's advert, with a new boot
// counter, tells them it restarted.
func (a *auctionSched) gone(i int, adopt bool) {
	if adopt {
		a.cl.Gone(i)
	}
}
