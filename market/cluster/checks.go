package cluster

import (
	"fmt"
	"time"

	"github.com/agora-sched/agora/market"
)

// The invariants the cluster holds its markets to, checked as it carries
// out each event, in every run: the simulator's, the scripts' and the
// fault campaign's (which adds its own, on what a whole run did).
//   - An attempt (a replica's epoch) starts at most once, on any node.
//   - No two processes of one replica run at once on one node.
//   - A Tick before the time NextTick gave does nothing (Config.TickEvery
//     ticks every node often enough to see one): the deadline queue holds
//     every timer.

// Violation is one broken invariant.
type Violation struct {
	At   time.Duration // virtual time
	Node int
	Key  market.TaskKey // the replica concerned; zero for none
	What string
}

func (v Violation) String() string {
	return fmt.Sprintf("%v n%d: %s", v.At.Round(time.Millisecond), v.Node, v.What)
}

// attempt names one start of a replica.
type attempt struct {
	key   market.TaskKey
	epoch uint64
}

type checks struct {
	started    map[attempt]bool
	violations []Violation
}

func (c *Cluster) violate(node int, key market.TaskKey, format string, args ...any) {
	c.checks.violations = append(c.checks.violations, Violation{At: c.Now(), Node: node, Key: key, What: fmt.Sprintf(format, args...)})
}

// Violations lists the invariants broken so far, in time order.
func (c *Cluster) Violations() []Violation { return c.checks.violations }

// checkStart checks a task start on node i before it is carried out.
func (c *Cluster) checkStart(i int, t market.TaskSpec) {
	if c.checks.started == nil {
		c.checks.started = map[attempt]bool{}
	}
	a := attempt{t.Key, t.Epoch}
	if c.checks.started[a] {
		c.violate(i, t.Key, "attempt %s@%d started a second time", t.Key, t.Epoch)
	}
	c.checks.started[a] = true
	if _, ok := c.nodes[i].running[t.Key]; ok {
		c.violate(i, t.Key, "replica %s started while a run of it goes on here", t.Key)
	}
}

// checkTick checks a Tick's effects against the NextTick asked before it.
func (c *Cluster) checkTick(i int, next, now time.Time, effs []market.Effect) {
	if len(effs) > 0 && (next.IsZero() || now.Before(next)) {
		c.violate(i, market.TaskKey{}, "Tick did something before NextTick said it would (%v): %d effects, first %T", next.Sub(c.cfg.Start), len(effs), effs[0])
	}
}
