package cluster

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
)

// Faults. Every recovery decision is the markets': the cluster only does
// what a node's process, store and network do.
//
//   - Crash: the node's running tasks and every message on its way to it
//     are lost, it sends nothing; what it persisted survives (its saved
//     job records, the copies it holds, its prediction history, saved at
//     the crash where a node saves it every few seconds).
//   - Gone: its peers' views drop it (a real node's after three missed
//     adverts): each live node gets market.PeerGone.
//   - Restart: a new market with what the node persisted
//     (market.Reclaim, market.ReplicaStored), the adverts of the live
//     peers it watches, and its own advert, whose new boot counter tells
//     peers that have not dropped it that it restarted.
//   - Join: a node that was absent starts, hears its peers' adverts and
//     advertises itself.
//   - Leave: the node drains (market.Drain) and, once it holds no task or
//     the caller gives up waiting (Drained), it is gone for good; its
//     leaving advert makes its peers drop it at once.

// Crash stops node i at once. Nothing it persisted is lost.
func (c *Cluster) Crash(i int) {
	nd := c.nodes[i]
	if !c.alive(i) {
		return
	}
	leaving := nd.state == Leaving
	nd.hist = nd.Market.History()
	c.dropNode(i)
	nd.state = Down
	if leaving {
		nd.state = Left // it was leaving anyway: it does not come back
	}
	nd.boot++ // what was on its way to the old boot is lost
	nd.gone = false
}

// Gone tells the live nodes that node i is gone (they drop it from their
// views). It does nothing when they were told already since i went down.
func (c *Cluster) Gone(i int) {
	nd := c.nodes[i]
	if nd.gone || c.alive(i) {
		return
	}
	nd.gone = true
	now := c.Time()
	for j := range c.nodes {
		if j == i || !c.alive(j) {
			continue
		}
		c.nodes[j].Market.PeerGone(now, nd.ID)
		c.drain(j)
	}
}

// Restart brings crashed node i back with what it persisted.
func (c *Cluster) Restart(i int) error {
	nd := c.nodes[i]
	if nd.state != Down {
		return fmt.Errorf("cluster: %s is not down", nd.ID)
	}
	mc := nd.cfg
	mc.Seed ^= int64(nd.boot) << 40
	m, err := market.New(mc)
	if err != nil {
		return fmt.Errorf("cluster: restart %s: %w", nd.ID, err)
	}
	if len(nd.hist) > 0 {
		m.RestoreHistory(nd.hist)
	}
	nd.Market, nd.state = m, Up
	now := c.Time()
	recs := make([]market.JobRecord, 0, len(nd.saved))
	for _, id := range slices.Sorted(maps.Keys(nd.saved)) {
		recs = append(recs, nd.saved[id])
	}
	// A node remembers the peers it saw, up or down now.
	var known []market.NodeID
	for _, o := range c.nodes {
		if o.state != Absent && o != nd {
			known = append(known, o.ID)
		}
	}
	var exits []market.TaskExit
	for _, x := range nd.ended {
		if now.Sub(x.Time) < reportWindow {
			exits = append(exits, x)
		}
	}
	m.Reclaim(now, recs, known, exits...)
	for _, id := range slices.Sorted(maps.Keys(nd.copies)) {
		cp := nd.copies[id]
		m.ReplicaLoaded(now, cp.Record, cp.Peers)
	}
	c.feedView(i)
	nd.last = advertSum{queue: -1}
	c.touch(i)
	c.drain(i)
	c.advertise(i, true)
	return nil
}

// Join starts node i, absent until now.
func (c *Cluster) Join(i int) {
	nd := c.nodes[i]
	if nd.state != Absent {
		return
	}
	nd.state = Up
	c.feedView(i)
	c.touch(i)
	c.drain(i)
}

// Leave starts node i's graceful leave: it drains, and is gone once it
// holds no task (or Drained is called).
func (c *Cluster) Leave(i int) {
	nd := c.nodes[i]
	if nd.state != Up {
		if nd.state == Down || nd.state == Absent {
			nd.state = Left // never (again) comes back
		}
		return
	}
	nd.state = Leaving
	nd.Market.Drain(c.Time())
	c.drain(i)
	c.leftIfIdle(i)
}

// Drained ends leaving node i's drain whatever it still holds.
func (c *Cluster) Drained(i int) {
	if nd := c.nodes[i]; nd.state == Leaving {
		c.dropNode(i)
		nd.state = Left
		nd.boot++
		c.Gone(i)
		c.cfg.Observer.Left(i)
	}
}

// leftIfIdle completes leaving node i's leave once it holds no task. As
// a real node flushes its last reports before its leave advert goes out,
// its peers drop it once those have arrived.
func (c *Cluster) leftIfIdle(i int) {
	nd := c.nodes[i]
	if nd.Market == nil || !nd.Market.Idle() || len(nd.running) > 0 {
		return
	}
	c.dropNode(i)
	nd.state = Left
	nd.boot++
	var flush time.Duration
	for _, j := range c.watchers[i] {
		if after, ok := c.cfg.Network.Link(i, j); ok {
			flush = max(flush, after)
		}
	}
	c.clock.Schedule(c.Now()+flush, Event{kind: evLeft, node: i})
}

// dropNode ends node i's life: its running tasks are lost, its pending
// tick is cancelled and its market is gone.
func (c *Cluster) dropNode(i int) {
	nd := c.nodes[i]
	keys := make([]market.TaskKey, 0, len(nd.running))
	for k := range nd.running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, market.TaskKey.Compare)
	for _, k := range keys {
		c.cfg.Observer.Ended(i, k, nd.running[k], -1, true)
	}
	nd.running = map[market.TaskKey]*Run{}
	nd.Market = nil
	nd.tickAt = -1
	c.gen++
	nd.tick = c.gen // a pending tick is stale
}

// Hear gives node i node j's current advert now, as j's next periodic
// advert would once a cut between them heals (the cluster sends adverts
// only when they change).
func (c *Cluster) Hear(i, j int) {
	if p := c.nodes[j].adv; c.alive(i) && c.alive(j) && p.ID != "" {
		c.nodes[i].Market.Advert(c.Time(), p)
		c.drain(i)
	}
}

// feedView gives node i's new market the adverts of the live peers it
// watches and can hear, as their next adverts would within an interval.
func (c *Cluster) feedView(i int) {
	now := c.Time()
	m := c.nodes[i].Market
	for _, j := range c.views[i] {
		if _, heard := c.cfg.Network.Link(j, i); !heard {
			continue
		}
		if p := c.nodes[j].adv; c.alive(j) && p.ID != "" {
			m.Advert(now, p)
		}
	}
}
