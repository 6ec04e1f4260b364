package sim

import (
	"math"
	"time"

	"github.com/agora-sched/agora/testnet/sim/workload"
)

// Node failures, churn, message loss and bandwidth.
//
// A node is in one of the nodeStates below. Failures are drawn per node
// from its class's FailureRate with a source of its own (splitmix64 seeded
// from the run's seed and the node's index), so the failure times do not
// depend on the scheduler and do not disturb any other random choice: a
// run without failures draws exactly the numbers it drew before failures
// were modelled.

type nodeState uint8

const (
	stUp      nodeState = iota // working
	stLeaving                  // draining before a graceful leave; still working
	stAbsent                   // not joined yet
	stDown                     // failed, waiting for repair
	stLeft                     // gone for good
)

// alive reports whether node i runs: up or draining.
func (e *engine) alive(i int) bool { return e.state[i] <= stLeaving }

// drainTimeout bounds how long a leaving node drains before it stops, as
// the real node's graceful stop does (node/drain.go).
const drainTimeout = 15 * time.Second

// faultHandler is what a scheduler does when nodes fail, return, join and
// leave. The engine keeps the node states and calls these after changing
// them.
type faultHandler interface {
	// crash: node i failed (its state is already stDown or stLeft); its
	// running work is lost and it sends nothing.
	crash(i int)
	// restart: node i is back after a failure, with what it persisted.
	restart(i int)
	// join: node i joins for the first time.
	join(i int)
	// leave: node i starts leaving gracefully; the scheduler calls
	// engine.left when it is done.
	leave(i int)
	// drained: the drain timeout of leaving node i ran out.
	drained(i int)
	// gone: the other nodes learn that node i is gone (adverts missed, a
	// leaving advert or a new boot); adopt says whether its jobs' record
	// replicas take over (not when it is already back).
	gone(i int, adopt bool)
}

// faultStats counts what failures and churn cost.
type faultStats struct {
	failures  int           // node failures
	restarted int           // task runs cut short by a failure or a leave, run again
	lostWork  time.Duration // task-time of those runs, thrown away
	dupRuns   int           // runs of a replica started while it ran elsewhere or had finished
	msgsLost  int64         // market messages dropped by Config.Loss
}

// splitmix is a tiny seeded generator, one per node that can fail.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// float is uniform in [0, 1).
func (s *splitmix) float() float64 { return float64(s.next()>>11) / (1 << 53) }

// setupFaults reads the nodes' failure, churn and bandwidth settings and
// schedules the first failures, joins and leaves. It pushes no event and
// allocates nothing per node when the cluster declares none of them.
func (e *engine) setupFaults(classes []workload.NodeClass) {
	n := len(e.nodes)
	e.state = make([]nodeState, n)
	e.boot = make([]uint64, n)
	e.goneSent = make([]bool, n)
	i := 0
	for _, nc := range classes {
		for range nc.Count {
			nd := &e.nodes[i]
			nd.rate, nd.repair, nd.join, nd.leave = nc.FailureRate, nc.Repair, nc.Join, nc.Leave
			if nd.repair <= 0 {
				nd.repair = workload.DefaultRepair
			}
			if nc.Bandwidth > 0 {
				if e.bw == nil {
					e.bw = make([]int64, n)
					e.linkFree = map[uint64]time.Duration{}
				}
				e.bw[i] = nc.Bandwidth
			}
			if nd.rate > 0 || nd.join > 0 || nd.leave > 0 {
				e.faults = true
			}
			i++
		}
	}
	if e.cfg.Loss > 0 {
		e.faults = true
	}
	if !e.faults {
		return
	}
	e.failRand = make([]splitmix, n)
	for i := range e.nodes {
		nd := &e.nodes[i]
		e.failRand[i] = failSeed(e.cfg.Seed, i)
		if nd.join > 0 {
			e.state[i] = stAbsent
			e.push(&event{at: nd.join, kind: evJoin, node: i})
		}
		if nd.leave > 0 {
			e.push(&event{at: nd.leave, kind: evLeave, node: i})
		}
		e.scheduleFailure(i, nd.join)
	}
}

// failSeed seeds node i's failure generator.
func failSeed(seed int64, i int) splitmix {
	return splitmix(uint64(seed)*0xD1B54A32D192ED03 ^ uint64(i+1)*0x8CB92BA72F3D8DD7)
}

// scheduleFailure draws node i's next failure after from.
func (e *engine) scheduleFailure(i int, from time.Duration) {
	nd := &e.nodes[i]
	if nd.rate <= 0 {
		return
	}
	d := failGap(&e.failRand[i], nd.rate)
	if d < 0 {
		return // beyond any run
	}
	e.push(&event{at: from + d, kind: evFail, node: i, gen: e.boot[i]})
}

// failGap draws the time to a node's next failure, exponential with rate
// failures per hour; -1 when it lies beyond a century.
func failGap(g *splitmix, rate float64) time.Duration {
	ns := -math.Log(1-g.float()) / rate * float64(time.Hour)
	if ns > float64(100*365*24*time.Hour) {
		return -1
	}
	return time.Duration(ns)
}

// fault handles the failure, repair, churn and liveness events.
func (e *engine) fault(s faultHandler, ev *event) {
	i := ev.node
	switch ev.kind {
	case evFail:
		if ev.gen != e.boot[i] || !e.alive(i) {
			return
		}
		e.stats.failures++
		e.lastProgress = e.now
		leaving := e.state[i] == stLeaving
		e.state[i] = stDown
		if leaving {
			e.state[i] = stLeft // it was leaving anyway: it does not come back
		}
		e.boot[i]++ // what was on its way to the old boot is lost
		e.goneSent[i] = false
		s.crash(i)
		e.push(&event{at: e.now + e.cfg.GoneAfter, kind: evGone, node: i, gen: e.boot[i]})
		if !leaving {
			e.push(&event{at: e.now + e.nodes[i].repair, kind: evRepair, node: i, gen: e.boot[i]})
		}
	case evGone:
		if ev.gen != e.boot[i] || e.goneSent[i] || e.alive(i) {
			return
		}
		e.goneSent[i] = true
		s.gone(i, true)
	case evRepair:
		if ev.gen != e.boot[i] || e.state[i] != stDown {
			return
		}
		e.lastProgress = e.now
		if !e.goneSent[i] {
			// Back before its peers dropped it: its new boot counter
			// tells them it is not the node they knew (gossip.Rebooted),
			// and it is live, so nobody adopts its jobs.
			e.goneSent[i] = true
			s.gone(i, false)
		}
		e.state[i] = stUp
		s.restart(i)
		e.scheduleFailure(i, e.now)
	case evJoin:
		if e.state[i] != stAbsent {
			return
		}
		e.lastProgress = e.now
		e.state[i] = stUp
		s.join(i)
	case evLeave:
		switch e.state[i] {
		case stUp:
			e.state[i] = stLeaving
			e.push(&event{at: e.now + drainTimeout, kind: evLeft, node: i, gen: e.boot[i]})
			s.leave(i)
		case stDown, stAbsent:
			e.state[i] = stLeft // never (again) comes back
		}
	case evLeft:
		if ev.gen == e.boot[i] && e.state[i] == stLeaving {
			s.drained(i)
		}
	}
}

// left finishes node i's graceful leave: its leaving advert makes its
// peers drop it at once, and its jobs are adopted.
func (e *engine) left(s faultHandler, i int) {
	if e.state[i] != stLeaving {
		return
	}
	e.state[i] = stLeft
	e.boot[i]++
	e.goneSent[i] = true
	e.lastProgress = e.now
	s.gone(i, true)
}

// pendingChange reports whether an arrival, a repair or a join is still
// to come: something that can unblock the jobs left.
func pendingChange(e *engine) bool {
	for _, ev := range e.q {
		switch ev.kind {
		case evArrive, evRepair, evJoin:
			return true
		}
	}
	return false
}

// transmit is when a message of size bytes from node from to node to has
// left the sender's link: links with a bandwidth send one message after
// another, each taking its size over the slower end's bandwidth.
func (e *engine) transmit(from, to, size int) time.Duration {
	bw := e.bw[from]
	if b := e.bw[to]; b > 0 && (bw == 0 || b < bw) {
		bw = b
	}
	if bw <= 0 {
		return e.now
	}
	key := uint64(from)<<32 | uint64(to)
	start := max(e.now, e.linkFree[key])
	done := start + time.Duration(float64(size)*float64(time.Second)/float64(bw))
	e.linkFree[key] = done
	return done
}
