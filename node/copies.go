package node

import (
	"context"
	"sync"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/replication"
)

// The node's side of job-record copies (the market decides, package
// replication carries the bytes): it pushes the copies a Replicate effect
// asks for and reports how they went, deletes the copies a DropReplica
// names, hands the copies peers push here to the market, and lets a
// submit wait for its job's first copies.

// pushCopies carries out a Replicate effect off the loop, then reports
// the outcome to the market.
func (n *Node) pushCopies(r market.Replicate) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, 2*n.mkt.Config().QueryTimeout)
		stored, err := n.repl.Push(ctx, r.Records)
		cancel()
		if err != nil {
			log.Debugw("copy job records", "records", len(r.Records), "err", err)
		}
		wanted, got := 0, 0
		for _, c := range r.Records {
			wanted += len(c.Peers) + len(c.Drop)
			got += stored[c.Record.ID]
		}
		n.met.copiesStored.Add(float64(got))
		n.met.copiesFailed.Add(float64(wanted - got))
		n.deliver(func() { n.mkt.Replicated(time.Now(), r.Batch, stored) })
		for _, c := range r.Records {
			n.copied.done(c.Record.ID)
		}
	}()
}

// dropCopy deletes a copy the market no longer needs: the job finished a
// retention ago (expired), or this node took it over.
func (n *Node) dropCopy(job string, expired bool) {
	if err := n.copies.Delete(job); err != nil {
		log.Warnw("drop job-record copy", "job", job, "err", err)
		return
	}
	if expired {
		n.met.expired.WithLabelValues("replica").Inc()
	}
}

// copiesStored hands copies a peer pushed, now stored, to the market.
func (n *Node) copiesStored(cs []replication.Copy) {
	n.deliver(func() {
		now := time.Now()
		for _, c := range cs {
			n.mkt.ReplicaStored(now, c.Record, c.Replicas)
		}
	})
}

// loadCopies hands the market every copy the store holds, at start.
func (n *Node) loadCopies() error {
	now := time.Now()
	return n.copies.Scan("", func(_ string, c replication.Copy) (bool, error) {
		n.mkt.ReplicaLoaded(now, c.Record, c.Replicas)
		return true, nil
	})
}

// copyWaiters let a submit wait until its job's first copies went out.
type copyWaiters struct {
	mu sync.Mutex
	w  map[string][]chan struct{}
}

// wait returns a channel closed once a push holding job's record ended.
func (c *copyWaiters) wait(job string) <-chan struct{} {
	ch := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		c.w = map[string][]chan struct{}{}
	}
	c.w[job] = append(c.w[job], ch)
	return ch
}

// done wakes whoever waits for job.
func (c *copyWaiters) done(job string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.w[job] {
		close(ch)
	}
	delete(c.w, job)
}

// forget stops waiting for job.
func (c *copyWaiters) forget(job string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.w, job)
}
