package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestPartitionRerunsOnce: an executor cut off from the manager long
// enough for its lease to lapse; the task runs again elsewhere; after the
// partition heals the stale executor's report is rejected and logged, and
// the task has exactly one successful attempt.
func TestPartitionRerunsOnce(t *testing.T) {
	res := func(i int) string {
		if i == 0 {
			return "cpu: 0\nmemory: 1GiB\ngpus: []\n" // the manager runs nothing itself
		}
		return "cpu: 2\nmemory: 4GiB\ngpus: []\n"
	}
	net := New(t, 3, Options{Resources: res, Topology: Star})
	net.WaitConverged(10 * time.Second)
	m := net.Node(0)
	id, err := m.Submit(`{"name": "part", "tasks": [{"name": "main", "command": ["sleep", "8"], "retries": 0}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var first string
	waitfor.Cond(t, 10*time.Second, "task to run", func() bool {
		s, err := m.Status(id)
		if err == nil && s.Tasks[0].State == "running" {
			first = s.Tasks[0].Node
		}
		return first != ""
	})
	exec := 1
	if net.Node(2).ID().String() == first {
		exec = 2
	}
	net.Partition(0, exec)
	cut := time.Now()
	waitfor.Cond(t, 20*time.Second, "task to run on the other node", func() bool {
		s, err := m.Status(id)
		return err == nil && s.Tasks[0].State == "running" && s.Tasks[0].Node != first
	})
	t.Logf("re-placed %v after the partition", time.Since(cut).Round(time.Millisecond))
	net.Heal(0, exec)
	s := waitJob(t, m, id, 30*time.Second)
	if s.State != "succeeded" {
		t.Fatalf("job %s: %s", s.State, s.Reason)
	}
	waitfor.Cond(t, 15*time.Second, "the stale executor's report to be rejected", func() bool {
		return strings.Contains(strings.Join(m.Events(id), "\n"), "stale report")
	})
	rec, ok := m.JobRecord(id)
	if !ok {
		t.Fatal("no job record")
	}
	okCount := 0
	for _, h := range rec.Tasks[0].History {
		if h.State == "succeeded" {
			okCount++
		}
	}
	if okCount != 1 {
		t.Fatalf("%d successful attempts: %+v", okCount, rec.Tasks[0].History)
	}
}

// stealMakespan queues 60 one-second tasks on a lone node, then starts three
// more nodes and measures how long the job takes from submit.
func stealMakespan(t *testing.T, steal bool) time.Duration {
	cfg := func(_ int, c *node.Config) { c.Market.NoSteal = !steal }
	four := func(int) string { return "cpu: 4\nmemory: 8GiB\ngpus: []\n" }
	net := New(t, 1, Options{Resources: four, Configure: cfg, Topology: Star})
	var tasks []string
	for i := 0; i < 60; i++ {
		tasks = append(tasks, fmt.Sprintf(`{"name": "t%02d", "command": ["sleep", "1"], "resources": {"cpu": 1}}`, i))
	}
	start := time.Now()
	id, err := net.Node(0).Submit(`{"name": "queued", "tasks": [` + strings.Join(tasks, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 30*time.Second, "all 60 tasks to be queued on the lone node", func() bool {
		s, err := net.Node(0).Status(id)
		if err != nil {
			return false
		}
		for _, tk := range s.Tasks {
			if tk.State == "pending" {
				return false
			}
		}
		return true
	})
	queued := time.Since(start)
	for i := 0; i < 3; i++ {
		net.Add()
	}
	added := time.Since(start)
	s := waitJob(t, net.Node(0), id, 60*time.Second)
	if s.State != "succeeded" {
		for _, e := range net.Node(0).Events(id) {
			t.Log(e)
		}
		t.Fatalf("job %s: %s", s.State, s.Reason)
	}
	total := time.Since(start)
	var firstSteal string
	stolen := 0
	for _, e := range net.Node(0).Events(id) {
		if strings.Contains(e, "stolen from") {
			if firstSteal == "" {
				firstSteal = e[:strings.IndexByte(e, ' ')]
			}
			stolen++
		}
	}
	t.Logf("steal=%v: all queued after %v, nodes added after %v, %d tasks stolen (first at %s), done after %v",
		steal, queued.Round(time.Millisecond), added.Round(time.Millisecond), stolen, firstSteal, total.Round(time.Millisecond))
	return total
}

// TestStealingOnRealNodes: with stealing on the makespan is at least 30 %
// shorter than with it off, measured in the same test.
func TestStealingOnRealNodes(t *testing.T) {
	off := stealMakespan(t, false)
	on := stealMakespan(t, true)
	t.Logf("makespan without stealing %v, with stealing %v (%.0f%% shorter)", off.Round(time.Millisecond), on.Round(time.Millisecond), 100*(1-on.Seconds()/off.Seconds()))
	if on.Seconds() > 0.7*off.Seconds() {
		t.Fatalf("stealing makespan %v is not 30%% shorter than %v", on, off)
	}
}

// TestAddedLatency: with 300 ms one-way latency injected between the
// manager and one executor, jobs still place and complete.
func TestAddedLatency(t *testing.T) {
	net := New(t, 3, Options{Resources: fourCPU, Topology: Star})
	net.WaitConverged(10 * time.Second)
	net.SetLatency(0, 1, 300*time.Millisecond)
	var tasks []string
	for i := 0; i < 12; i++ {
		tasks = append(tasks, fmt.Sprintf(`{"name": "t%02d", "command": ["sleep", "0.3"], "resources": {"cpu": 1}}`, i))
	}
	start := time.Now()
	id, err := net.Node(0).Submit(`{"name": "slow-link", "tasks": [` + strings.Join(tasks, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 60*time.Second)
	if s.State != "succeeded" {
		t.Fatalf("job %s: %s", s.State, s.Reason)
	}
	per := map[string]int{}
	for _, tk := range s.Tasks {
		per[tk.Node]++
	}
	t.Logf("done in %v; tasks per node %v", time.Since(start).Round(time.Millisecond), per)
}
