package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
)

// TestChecksCatchARepeatedStart: the cluster's own invariants fire when a
// market starts one attempt twice, the second while the first runs, and
// stay quiet for a new epoch after the run ended.
func TestChecksCatchARepeatedStart(t *testing.T) {
	var mcs []market.Config
	for _, id := range []market.NodeID{"n0", "n1"} {
		mcs = append(mcs, market.Config{Self: id, Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	}
	q := NewQueue()
	c, err := New(Config{Markets: mcs, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Clock: q,
		Runtime: func(int, market.TaskSpec) (time.Duration, int) { return time.Minute, 0 }})
	if err != nil {
		t.Fatal(err)
	}
	task := market.TaskSpec{TaskOffer: market.TaskOffer{Key: market.TaskKey{Job: "j", Task: "t"}}, Epoch: 1}
	c.start(1, market.StartTask{Task: task, Manager: "n0"})
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("a first start broke %v", v)
	}
	c.start(1, market.StartTask{Task: task, Manager: "n0"})
	var got []string
	for _, v := range c.Violations() {
		got = append(got, v.String())
	}
	want := []string{"started a second time", "while a run of it goes on"}
	if len(got) != len(want) {
		t.Fatalf("violations %q, want ones saying %q", got, want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("violation %q does not say %q", got[i], w)
		}
	}
	delete(c.nodes[1].running, task.Key)
	task.Epoch = 2
	c.start(1, market.StartTask{Task: task, Manager: "n0"})
	if n := len(c.Violations()); n != 2 {
		t.Errorf("a new epoch after the run ended broke %d more invariants", n-2)
	}
}
