package node

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/store"
)

// reclaimAsk is how many live peers closest to a job ID a restarted
// manager asks whether they took the job over: the job's record replicas
// (jobReplicas) are the closest peers of the manager's view when it last
// replicated, and the view after a restart may have gained or lost a few.
const reclaimAsk = 2 * jobReplicas

// reclaimParallel bounds the queries in flight while reclaiming.
const reclaimParallel = 16

// heldJobs are the unfinished jobs a restarted node holds back until
// reclaimJobs has asked its peers about them. The API lists them, and
// refuses to cancel them until they are restored.
type heldJobs struct {
	mu   sync.Mutex
	jobs map[string]market.JobRecord
}

func (h *heldJobs) set(jobs []market.JobRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jobs = map[string]market.JobRecord{}
	for _, j := range jobs {
		h.jobs[j.ID] = j
	}
}

// list returns the held jobs, oldest submit first.
func (h *heldJobs) list() []market.JobRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]market.JobRecord, 0, len(h.jobs))
	for _, j := range h.jobs {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Submitted.Equal(out[b].Submitted) {
			return out[a].Submitted.Before(out[b].Submitted)
		}
		return out[a].ID < out[b].ID
	})
	return out
}

func (h *heldJobs) has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.jobs[id]
	return ok
}

// release ends the hold of every job (they are restored or forgotten).
func (h *heldJobs) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jobs = nil
}

// splitRestored parts the job records a restarting node loaded into those
// it restores at once (finished jobs: nothing to place) and those it holds
// until reclaimJobs has asked its peers about them (unfinished jobs).
func splitRestored(jobs []market.JobRecord) (now, held []market.JobRecord) {
	for _, j := range jobs {
		if j.State.Terminal() {
			now = append(now, j)
		} else {
			held = append(held, j)
		}
	}
	return now, held
}

// reclaimJobs restores, after a restart, the unfinished jobs this node
// managed, except those a peer took over while it was down.
//
// A manager that is gone longer than its peers' failure detection has its
// jobs adopted by the closest live holder of each record's replica
// (checkFailover), and their executors report to the adopter from then on.
// Restoring such a job as well would place it twice: the restarted node
// would re-place its pending tasks and, when the leases of the tasks the
// adopter now tracks ran out, run those again. So the node first waits
// for a settled view (waitViewSettled), then asks the live peers closest
// to each job ID for the job. A peer that answers with a record it manages
// itself took the job over: the node forgets its own record (the adopter
// holds the current one and replicates it) and logs an event. The other
// jobs are restored (market.Restore), as before. A peer that does not
// answer counts as not having the job.
//
// While a job is held, the node's market does not know it: queries about
// it are answered from the stored record, the API lists it from there and
// refuses to cancel it (for a few seconds), and executors' reports for it
// are ignored (they are repeated).
func (n *Node) reclaimJobs(held []market.JobRecord) {
	defer n.wg.Done()
	defer n.held.release()
	if !n.waitViewSettled(time.Now()) {
		return
	}
	adopter := make([]peer.ID, len(held))
	var mu sync.Mutex // guards adopter
	var wg sync.WaitGroup
	sem := make(chan struct{}, reclaimParallel)
	for i, j := range held {
		for _, p := range n.closestPeers(j.ID, reclaimAsk, nil) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if n.managedBy(n.ctx, p, j.ID) {
					mu.Lock()
					adopter[i] = p // two adopters cannot be: any one will do
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if n.ctx.Err() != nil {
		return
	}
	var keep []market.JobRecord
	var evs []store.LogAppend
	for i, j := range held {
		p := adopter[i]
		if p == "" {
			keep = append(keep, j)
			continue
		}
		log.Infow("restart: a peer took this job over while the node was down; not restoring it", "job", j.ID, "manager", p)
		if err := n.jobs.Delete(j.ID); err != nil {
			log.Warnw("forget job record", "job", j.ID, "err", err)
		}
		line := time.Now().UTC().Format(time.RFC3339Nano) + " manager restarted: " + p.String() + " took the job over meanwhile; not restored here\n"
		evs = append(evs, store.LogAppend{Stream: eventsStream(j.ID), Data: []byte(line)})
	}
	_ = n.call(func() {
		if len(evs) > 0 {
			n.writeEvents(evs)
		}
		if len(keep) > 0 {
			n.mkt.Restore(time.Now(), keep)
			log.Infow("restored unfinished jobs", "count", len(keep), "taken_over", len(held)-len(keep))
		}
		n.held.release() // on the loop: the market has them from this turn on
	})
}

// reclaimMaxWait bounds, in advert intervals, how long a restarted node
// waits for its view before it asks about its held jobs regardless.
const reclaimMaxWait = 10

// waitViewSettled waits, from start, until this node's view is worth
// asking: an advert interval and a half (every peer has seen the node
// alive again and adopts nothing more), and an advert interval after the
// first peer's advert arrived (every live peer advertises once an
// interval, so by then the peers closest to a job ID are in the view).
// On a loaded machine the first advert can take longer than the interval
// and a half to arrive; asking an empty view found no adopter, and the
// node restored a job its adopter was running (TestRestartedManagerYieldsAdoptedJob
// failed so about half the time with another process busy). A node with
// no bootstrap peers and no connection at the interval and a half is
// alone and goes on; any other goes on after reclaimMaxWait intervals at
// most. It returns false when the node stops meanwhile.
func (n *Node) waitViewSettled(start time.Time) bool {
	iv := n.cfg.AdvertInterval
	floor, limit := start.Add(iv+iv/2), start.Add(reclaimMaxWait*iv)
	var first time.Time
	t := time.NewTicker(max(iv/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return false
		case <-t.C:
		}
		now := time.Now()
		if first.IsZero() && len(n.Peers()) > 0 {
			first = now
		}
		switch {
		case now.Before(floor):
		case !first.IsZero() && now.Sub(first) >= iv:
			return true
		case first.IsZero() && len(n.cfg.Bootstrap) == 0 && len(n.host.Network().Peers()) == 0:
			return true // alone: nobody can have adopted anything
		case !now.Before(limit):
			log.Warnw("restart: no settled view to ask about held jobs; restoring them", "peers", len(n.Peers()))
			return true
		}
	}
}

// managedBy asks peer p whether it manages job itself.
func (n *Node) managedBy(ctx context.Context, p peer.ID, job string) bool {
	rep, err := n.ask(ctx, p, wire.Query{Kind: "status", Job: job})
	if err != nil || !rep.Found {
		return false
	}
	var j market.JobRecord
	return json.Unmarshal(rep.Body, &j) == nil && j.Manager == market.NodeID(p.String())
}
