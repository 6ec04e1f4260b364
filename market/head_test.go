package market

import (
	"fmt"
	"testing"
	"time"
)

// A wide gang (three replicas of four nodes) arrives behind four long
// tasks while a stream of longer tasks keeps coming. The three nodes
// whose tasks end first keep room for it (the head, computed from the
// adverts), so it starts when their tasks end; a short task that ends by
// then runs on one of them meanwhile (backfill). A gang of two made the
// head by the starvation bound leaves the first node to free to the
// stream (EASY's extra processor: two nodes free later, by the shadow)
// and starts when the next two free; so does one under the node's
// default HeadWidth (−1: every gang that waited GangReserveAfter is a
// candidate). With the head switched off (HeadWidth above 1, or 0.5
// for the narrow gang without the bound; GangForceEvery −1, the
// default, forces no reservation either) the stream's tasks take each
// node as it frees and the gang waits for a gap.
func TestWideGangHeadOnStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		width    float64
		after    time.Duration // Config.HeadAfter
		replicas int
		bounded  bool
		backfill bool // the short task runs on a node keeping room
	}{
		{"head", 0, -1, 3, true, true},
		{"no head", 2, -1, 3, false, false},
		// A gang of two of the four nodes is not wide: it becomes the
		// head once it has waited HeadAfter (a starvation bound), or
		// never.
		{"narrow gang, starvation bound", 0.5, 15 * time.Second, 2, true, false},
		{"narrow gang, no bound", 0.5, -1, 2, false, false},
		// The node's default (HeadWidth −1): every gang that waited
		// GangReserveAfter is a head candidate, narrow or wide.
		{"narrow gang, node default", 0, -1, 2, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, func(_ int, cfg *Config) {
				cfg.HeadWidth, cfg.HeadAfter, cfg.GangForceEvery = tc.width, tc.after, -1
			}, cpuNode(1), cpuNode(1), cpuNode(1), cpuNode(1))
			runs := map[string]time.Duration{"long0": 20 * time.Second, "long1": 40 * time.Second, "long2": 40 * time.Second, "long3": 100 * time.Second,
				"stream": 50 * time.Second, "short": 3 * time.Second, "gang": 10 * time.Second}
			c.run = func(s TaskSpec, _ NodeID) (int, time.Duration) { return 0, runs[s.Type] }
			submit := func(node int, id, typ string, est time.Duration, replicas int) {
				ts := task("t", 1000)
				ts.Estimate, ts.Replicas, ts.Gang = est, replicas, replicas > 1
				c.submit(node, id, job(typ, ts))
			}
			for k := range 4 {
				submit(k, fmt.Sprintf("long%d", k), fmt.Sprintf("long%d", k), 60*time.Second+time.Duration(k/3)*time.Minute, 1)
			}
			c.until(5*time.Second, "long tasks running", func() bool { return len(c.starts) == 4 })
			submit(0, "gang", "gang", 30*time.Second, tc.replicas)
			start := c.now
			next, n := c.now.Add(6*time.Second), 0
			short := false
			for !started(c, "gang") && c.now.Sub(start) < 90*time.Second {
				if !c.now.Before(next) && n < 40 {
					submit(n%4, fmt.Sprintf("s%d", n), "stream", 100*time.Second, 1)
					next, n = c.now.Add(2*time.Second), n+1
				}
				if !short && c.now.Sub(start) >= 21*time.Second {
					submit(1, "short", "short", 5*time.Second, 1) // ends by the shadow (long tasks' estimates)
					short = true
				}
				c.step()
			}
			waited := c.now.Sub(start)
			t.Logf("gang started %v after it was submitted: %v", waited, started(c, "gang"))
			// Two of the gang's nodes free 40 s after the long tasks
			// started: the gang starts then, within the bound of their
			// estimates (60 s), the short task having run on the first.
			if tc.bounded && (waited > 60*time.Second || tc.backfill && !started(c, "short")) {
				t.Fatalf("with the head: gang waited %v (bound 60s), short task started %v", waited, started(c, "short"))
			}
			if !tc.bounded && started(c, "gang") && waited <= 60*time.Second {
				t.Fatalf("without the head the gang waited only %v: the scenario does not discriminate", waited)
			}
		})
	}
}

func started(c *cluster, job string) bool {
	for _, s := range c.starts {
		if s.key.Job == job {
			return true
		}
	}
	return false
}

// EASY keeps the head's room on the nodes that free last by the shadow
// time; the others are extra and may run a job that outlasts it. Two of
// four one-core nodes run a gang with 100 s left by its estimate, two are
// idle, and a wide gang of three waits: its shadow is at 100 s, when four
// nodes have room, one more than it needs. One idle node is therefore
// extra and starts a long task at once; the gang still starts at 100 s.
// Keeping the earliest three nodes instead left both idle nodes empty for
// 100 s and the long task waiting for the fourth.
func TestHeadExtraNodesBackfillLongTasks(t *testing.T) {
	c := newClusterWith(t, func(_ int, cfg *Config) {
		cfg.GangForceEvery = -1
	}, cpuNode(1), cpuNode(1), cpuNode(1), cpuNode(1))
	runs := map[string]time.Duration{"first": 100 * time.Second, "wide": 10 * time.Second, "long": 300 * time.Second}
	c.run = func(s TaskSpec, _ NodeID) (int, time.Duration) { return 0, runs[s.Type] }
	submit := func(id string, est time.Duration, replicas int) {
		ts := task("t", 1000)
		ts.Estimate, ts.Replicas, ts.Gang = est, replicas, replicas > 1
		c.submit(0, id, job(id, ts))
	}
	submit("first", 100*time.Second, 2)
	c.until(5*time.Second, "first gang running", func() bool { return started(c, "first") })
	t0 := c.now
	submit("wide", 30*time.Second, 3)
	c.until(15*time.Second, "wide gang waiting as the head", func() bool { return c.now.Sub(t0) >= 10*time.Second })
	if started(c, "wide") {
		t.Fatal("the wide gang started on two free nodes")
	}
	t1 := c.now
	submit("long", 400*time.Second, 1)
	c.until(150*time.Second, "wide gang started", func() bool { return started(c, "wide") })
	var longAt, wideAt time.Time
	for _, s := range c.starts {
		switch s.key.Job {
		case "long":
			longAt = s.at
		case "wide":
			wideAt = s.at
		}
	}
	t.Logf("long task started %v after its submission (negative: not yet), wide gang %v after its own", longAt.Sub(t1), wideAt.Sub(t0))
	if longAt.IsZero() || longAt.Sub(t1) > 5*time.Second {
		t.Fatalf("the long task did not start on the extra node: started %v", !longAt.IsZero())
	}
	if wideAt.Sub(t0) > 105*time.Second {
		t.Fatalf("the wide gang waited %v, past the shadow time (100 s)", wideAt.Sub(t0))
	}
}
