package market

import (
	"strconv"
	"testing"
	"time"
)

// TestArrayThrottle (issue 47, done-when 5): an array task runs each
// index once, told its index, with never more replicas awarded or
// running at once than its throttle, though the nodes have room for all.
// Each replica is told its index and its element's value.
func TestArrayThrottle(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(16), cpuNode(16))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 700 * time.Millisecond }
	tk := task("el", 100)
	tk.Array, tk.Replicas = "0-59:2%5", 30 // 0, 2, ..., 58
	for i := 0; i < 60; i += 2 {
		tk.ArrayValues = append(tk.ArrayValues, "v"+strconv.Itoa(i))
	}
	c.submit(0, "a", job("array", tk))
	peak := 0
	c.until(2*time.Minute, "the array to finish", func() bool {
		running := 0
		for _, rs := range c.running {
			running += len(rs)
		}
		peak = max(peak, running)
		if running > 5 {
			t.Fatalf("%d replicas running at once, throttle 5", running)
		}
		return c.job(0, "a").State == JobSucceeded
	})
	seen := map[string]int{}
	for _, s := range c.starts {
		seen[s.index]++
		if s.value != "v"+s.index {
			t.Errorf("index %s was told the value %q", s.index, s.value)
		}
	}
	for i := 0; i < 60; i += 2 {
		if seen[strconv.Itoa(i)] != 1 {
			t.Errorf("index %d ran %d times", i, seen[strconv.Itoa(i)])
		}
	}
	if len(seen) != 30 || peak != 5 {
		t.Errorf("%d indices ran, peak %d at once; want 30 and 5", len(seen), peak)
	}
	j := c.job(0, "a")
	for _, r := range j.Tasks {
		if r.Attempts != 1 {
			t.Errorf("%s: %d attempts", r.Key, r.Attempts)
		}
	}
}

// TestArrayWaitingReason: a replica held back by its array's throttle
// says so.
func TestArrayWaitingReason(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(16))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Hour }
	tk := task("el", 100)
	tk.Array, tk.Replicas = "0-9%2", 10
	c.submit(0, "a", job("array", tk))
	c.until(10*time.Second, "two replicas to run", func() bool { return len(c.starts) == 2 })
	if w := c.job(0, "a").Tasks[9].Waiting; w != "array throttle: 2 of its task's replicas awarded or running, the most at once (%2)" {
		t.Fatalf("waiting %q", w)
	}
}
