package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
)

// Event is one of the cluster's own events, queued on its Clock and
// handed back to Handle when due.
type Event struct {
	kind   eventKind
	node   int
	from   int
	gen    uint64
	msg    market.Msg
	key    market.TaskKey
	copies *copyBatch
}

type eventKind uint8

const (
	evDeliver eventKind = iota // a message reaches node
	evFinish                   // a task process on node ends
	evTick                     // node's market has timed work
	evAdvert                   // an advert round
	evCopy                     // job-record copies reach their peers
	evCopied                   // the peers' answer reaches the manager
)

// copyBatch is a Replicate effect on its way, and what came of it.
type copyBatch struct {
	r      market.Replicate
	stored map[string]int
}

// Handle carries out an event the cluster scheduled.
func (c *Cluster) Handle(ev Event) {
	now := c.Time()
	switch ev.kind {
	case evDeliver:
		nd := c.nodes[ev.node]
		if !c.alive(ev.node) || ev.gen != nd.boot {
			return // its node crashed or left
		}
		nd.Market.Step(now, c.nodes[ev.from].ID, ev.msg)
		c.drain(ev.node)
	case evFinish:
		c.finish(ev)
	case evTick:
		nd := c.nodes[ev.node]
		if nd.tick != ev.gen || nd.Market == nil {
			return // superseded by an earlier tick
		}
		nd.tickAt = -1
		nd.Market.Tick(now)
		if c.cfg.Faults {
			// With failures and loss a market can report a deadline due
			// that its Tick does not clear at once; the real node ticks
			// every 10ms regardless. Back off such ticks, up to a second,
			// rather than spin at minTickGap.
			if nt := nd.Market.NextTick(); !nt.IsZero() && !nt.After(now) {
				nd.spins = min(nd.spins+1, 10)
			} else {
				nd.spins = 0
			}
		}
		c.drain(ev.node)
	case evAdvert:
		c.adverts()
		c.clock.Schedule(c.Now()+c.cfg.AdvertEvery, Event{kind: evAdvert})
	case evCopy:
		c.storeCopies(ev)
	case evCopied:
		nd := c.nodes[ev.node]
		if !c.alive(ev.node) || ev.gen != nd.boot {
			return
		}
		nd.Market.Replicated(now, ev.copies.r.Batch, ev.copies.stored)
		c.drain(ev.node)
	}
}

// drain carries out node i's effects.
func (c *Cluster) drain(i int) {
	c.wake(i)
	nd := c.nodes[i]
	effs := nd.Market.Ready()
	if len(effs) == 0 {
		return
	}
	c.touch(i)
	c.cfg.Observer.Effects(i, effs)
	for _, eff := range effs {
		switch x := eff.(type) {
		case market.Send:
			if j, ok := c.index[x.To]; ok {
				c.send(i, j, x.Msg)
			}
		case market.Broadcast:
			for _, j := range c.views[i] {
				if c.reachable(j) {
					c.send(i, j, x.Msg)
				}
			}
		case market.StartTask:
			c.start(i, x)
		case market.StopTask:
			if r, ok := nd.running[x.Key]; ok && r.Epoch == x.Epoch && !r.Stopping {
				r.Stopping, r.Drained, r.exit = true, nd.state == Leaving, -1
				c.gen++
				r.gen = c.gen
				c.clock.Schedule(c.Now()+10*time.Millisecond, Event{kind: evFinish, node: i, key: x.Key, gen: c.gen})
			}
		case market.SaveJob:
			if c.cfg.Faults {
				if nd.saved == nil {
					nd.saved = map[string]market.JobRecord{}
				}
				nd.saved[x.Job.ID] = x.Job
			}
			c.cfg.Observer.Saved(i, x.Job)
		case market.ForgetJob:
			delete(nd.saved, x.Job)
		case market.Replicate:
			c.clock.Schedule(c.Now()+c.cfg.CopyDelay, Event{kind: evCopy, node: i, gen: nd.boot, copies: &copyBatch{r: x}})
		case market.DropReplica:
			delete(nd.copies, x.Job)
		}
	}
}

// start starts a task process on node i.
func (c *Cluster) start(i int, x market.StartTask) {
	nd := c.nodes[i]
	c.gen++
	r := &Run{gen: c.gen, Epoch: x.Task.Epoch, Start: c.Now()}
	nd.running[x.Task.Key] = r
	c.cfg.Observer.Started(i, x.Task)
	d, exit := c.cfg.Runtime(i, x.Task)
	r.exit = exit
	c.clock.Schedule(c.Now()+d, Event{kind: evFinish, node: i, key: x.Task.Key, gen: r.gen})
}

// finish ends a task process and reports its exit to its node's market.
func (c *Cluster) finish(ev Event) {
	nd := c.nodes[ev.node]
	r, ok := nd.running[ev.key]
	if !ok || r.gen != ev.gen {
		return
	}
	delete(nd.running, ev.key)
	c.touch(ev.node)
	reason := fmt.Sprintf("exit status %d", r.exit)
	if r.Stopping {
		reason = "stopped"
	}
	c.cfg.Observer.Ended(ev.node, ev.key, r, r.exit, false)
	nd.Market.TaskExited(c.Time(), ev.key, r.Epoch, r.exit, reason)
	c.drain(ev.node)
	if nd.state == Leaving {
		c.leftIfIdle(ev.node)
	}
}

// storeCopies stores a manager's job-record copies on its replica peers
// that are up, tells their markets, and sends the manager the answer.
func (c *Cluster) storeCopies(ev Event) {
	b := ev.copies
	b.stored = map[string]int{}
	now := c.Time()
	var touched []int
	for _, rc := range b.r.Records {
		for _, p := range append(slices.Clip(rc.Peers), rc.Drop...) {
			j, ok := c.index[p]
			if !ok || !c.alive(j) {
				continue
			}
			nd := c.nodes[j]
			if nd.copies == nil {
				nd.copies = map[string]Copy{}
			}
			if slices.Contains(rc.Peers, p) {
				nd.copies[rc.Record.ID] = Copy{Record: rc.Record, Peers: rc.Peers}
			} else {
				delete(nd.copies, rc.Record.ID)
			}
			nd.Market.ReplicaStored(now, rc.Record, rc.Peers)
			b.stored[rc.Record.ID]++
			if !slices.Contains(touched, j) {
				touched = append(touched, j)
			}
		}
	}
	slices.Sort(touched)
	for _, j := range touched {
		c.drain(j)
	}
	c.clock.Schedule(c.Now()+c.cfg.CopyDelay, Event{kind: evCopied, node: ev.node, gen: ev.gen, copies: b})
}
