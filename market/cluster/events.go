package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
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
	rec    int // evCopy: which of copies' records
}

type eventKind uint8

const (
	evDeliver eventKind = iota // a message reaches node
	evFinish                   // a task process on node ends
	evTick                     // node's market has timed work
	evAdvert                   // an advert round
	evCopy                     // a job-record copy reaches a peer
	evCopied                   // a peer's answer reaches the manager
	evLeft                     // a leaving node's last reports have arrived: it is gone
	evTickAll                  // every node's fixed-period tick (Config.TickEvery)
)

// copyBatch is a Replicate effect on its way, and what came of it.
type copyBatch struct {
	r       market.Replicate
	manager int
	gen     uint64 // the manager's boot when it sent them
	stored  map[string]int
	waiting int // answers still to come
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
		c.storeCopy(ev)
	case evCopied:
		c.copyAnswered(ev.copies)
	case evLeft:
		c.Gone(ev.node)
		c.cfg.Observer.Left(ev.node)
	case evTickAll:
		c.tickAll()
		c.clock.Schedule(c.Now()+c.cfg.TickEvery, Event{kind: evTickAll})
	}
}

// tickAll ticks every working node, and checks that none did something
// before its market's NextTick said it would.
func (c *Cluster) tickAll() {
	now := c.Time()
	for i, nd := range c.nodes {
		if nd.Market == nil || !c.alive(i) {
			continue
		}
		c.drain(i)
		next := nd.Market.NextTick()
		nd.Market.Tick(now)
		effs := nd.Market.Ready()
		c.checkTick(i, next, now, effs)
		c.carryOut(i, effs)
	}
}

// drain carries out node i's effects.
func (c *Cluster) drain(i int) {
	c.carryOut(i, c.nodes[i].Market.Ready())
}

// carryOut carries out effects of node i's market.
func (c *Cluster) carryOut(i int, effs []market.Effect) {
	c.wake(i)
	nd := c.nodes[i]
	// What a node advertises can change without an effect — a
	// reservation taken, a head moved by a peer's advert, a gang's wait
	// crossing GangReserveAfter at a tick — and a real node publishes its
	// advert every interval whatever happened: the next round looks.
	c.touch(i)
	if len(effs) == 0 {
		return
	}
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
		case market.PublishUsage:
			// The usage topic reaches the view, as the jobs topic does.
			for _, j := range c.views[i] {
				if c.reachable(j) {
					c.send(i, j, x.Summary)
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
			c.sendCopies(i, x)
		case market.DropReplica:
			delete(nd.copies, x.Job)
		}
	}
}

// start starts a task process on node i.
func (c *Cluster) start(i int, x market.StartTask) {
	c.checkStart(i, x.Task)
	nd := c.nodes[i]
	c.gen++
	r := &Run{gen: c.gen, Epoch: x.Task.Epoch, Start: c.Now(), outputs: len(x.Task.Outputs) > 0, attempt: x.Task.Attempt, manager: x.Manager}
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
	var outputs *market.DataRef
	if r.outputs && r.exit == 0 {
		// Outputs are modelled as kept by the node that ran the task,
		// no bytes moved: the data path is not simulated.
		sum := sha256.Sum256([]byte(market.DataKey(ev.key) + "@" + strconv.FormatUint(r.Epoch, 10)))
		outputs = &market.DataRef{Manifest: hex.EncodeToString(sum[:]), Holders: []market.NodeID{nd.ID}}
	}
	now := c.Time()
	keep := nd.ended[:0]
	for _, x := range nd.ended {
		if now.Sub(x.Time) < reportWindow {
			keep = append(keep, x)
		}
	}
	nd.ended = keep
	if !r.Stopping { // a stopped run's end is its manager's doing: not reported again
		nd.ended = append(nd.ended, market.TaskExit{Key: ev.key, Epoch: r.Epoch, Attempt: r.attempt, ExitCode: r.exit, Reason: reason, Time: now, Outputs: outputs, Manager: r.manager})
	}
	nd.Market.TaskExited(now, ev.key, r.Epoch, r.exit, reason, outputs)
	c.drain(ev.node)
	if nd.state == Leaving {
		c.leftIfIdle(ev.node)
	}
}

// sendCopies sends each record of a Replicate effect to its peers, as
// the job-record protocol would, over the links that work.
func (c *Cluster) sendCopies(i int, r market.Replicate) {
	b := &copyBatch{r: r, manager: i, gen: c.nodes[i].boot, stored: map[string]int{}}
	for k, rc := range r.Records {
		for _, p := range append(slices.Clip(rc.Peers), rc.Drop...) {
			j, ok := c.index[p]
			if !ok {
				continue
			}
			if after, ok := c.cfg.Network.Link(i, j); ok {
				b.waiting++
				c.clock.Schedule(c.Now()+after, Event{kind: evCopy, node: j, from: i, gen: c.nodes[j].boot, copies: b, rec: k})
			}
		}
	}
	if b.waiting == 0 {
		b.waiting = 1
		c.copyAnswered(b)
	}
}

// storeCopy stores a job-record copy on the peer it reached, if it is up,
// or deletes the peer's copy when the record's replica set left it out,
// tells its market, and sends the manager the answer.
func (c *Cluster) storeCopy(ev Event) {
	b, j := ev.copies, ev.node
	nd := c.nodes[j]
	rc := b.r.Records[ev.rec]
	if c.alive(j) && ev.gen == nd.boot {
		if nd.copies == nil {
			nd.copies = map[string]Copy{}
		}
		if slices.Contains(rc.Peers, nd.ID) {
			nd.copies[rc.Record.ID] = Copy{Record: rc.Record, Peers: rc.Peers}
		} else {
			delete(nd.copies, rc.Record.ID)
		}
		nd.Market.ReplicaStored(c.Time(), rc.Record, rc.Peers)
		c.drain(j)
		b.stored[rc.Record.ID]++
	}
	if after, ok := c.cfg.Network.Link(j, b.manager); ok {
		c.clock.Schedule(c.Now()+after, Event{kind: evCopied, node: b.manager, copies: b})
	} else {
		c.copyAnswered(b) // the answer is lost: the peer counts as not storing
	}
}

// copyAnswered counts one answer in; with the last, the manager learns
// how its batch went, unless it crashed since it sent it.
func (c *Cluster) copyAnswered(b *copyBatch) {
	if b.waiting--; b.waiting > 0 {
		return
	}
	if !c.alive(b.manager) || c.nodes[b.manager].boot != b.gen {
		return
	}
	nd := c.nodes[b.manager]
	nd.Market.Replicated(c.Time(), b.r.Batch, b.stored)
	c.drain(b.manager)
}
