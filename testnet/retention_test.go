package testnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestJobRetention: a finished job stays visible from every node (the
// manager's record and events, the replicas' copies, the executors' task
// logs and task directories) until its retention passes, and then every
// node deletes its part: no node knows the job, no executor keeps an
// execution, a log or a task directory of it.
func TestJobRetention(t *testing.T) {
	const retention = 5 * time.Second
	net := New(t, 3, Options{Configure: func(_ int, c *node.Config) { c.Market.JobRetention = retention }})
	net.WaitConverged(10 * time.Second)
	mgr := net.Node(0)
	submitted := time.Now()
	id, err := mgr.Submit(`{"name": "kept", "tasks": [
		{"name": "a", "command": ["sh", "-c", "echo hello-a"], "resources": {"cpu": "100m"}},
		{"name": "b", "command": ["sh", "-c", "echo hello-b"], "resources": {"cpu": "100m"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := waitJob(t, mgr, id, 20*time.Second); s.State != "succeeded" {
		t.Fatalf("job %s: %+v", s.State, s)
	}
	finished := time.Now()
	runs := func() int {
		total := 0
		for _, nd := range net.Up() {
			_, r := nd.PeakCPU(id)
			total += r
		}
		return total
	}
	// Within the retention: every node answers for the job, with its logs.
	for _, nd := range net.Up() {
		if _, err := nd.Status(id); err != nil {
			t.Fatalf("node %d, before the retention passed: %v", nd.Index, err)
		}
	}
	lg, err := net.Node(1).Logs(id, "")
	if err != nil || len(lg.Logs) != 2 || !strings.Contains(lg.Logs[0].Data+lg.Logs[1].Data, "hello-b") {
		t.Fatalf("logs before the retention passed: %+v, %v", lg, err)
	}
	taskDirs := func() int {
		c := 0
		for _, nd := range net.Up() {
			if _, err := os.Stat(filepath.Join(nd.Config.DataDir, "tasks", id)); err == nil {
				c++
			}
		}
		return c
	}
	if taskDirs() == 0 {
		t.Fatal("no node has the job's task directories")
	}
	if r := runs(); r != 2 || len(mgr.Events(id)) == 0 {
		t.Fatalf("before the retention passed: %d executions, %d events", r, len(mgr.Events(id)))
	}
	if time.Since(finished) >= retention {
		t.Skipf("the checks took %v, longer than the retention: machine too slow to tell", time.Since(finished))
	}
	// After it: gone everywhere.
	waitfor.Cond(t, 20*time.Second, "every node to forget the job", func() bool {
		for _, nd := range net.Up() {
			if _, err := nd.Status(id); err == nil || !strings.Contains(err.Error(), "404") {
				return false
			}
		}
		_, kept := mgr.JobRecord(id)
		return !kept && runs() == 0 && len(mgr.Events(id)) == 0 && taskDirs() == 0
	})
	if gone := time.Since(submitted); gone < retention {
		t.Fatalf("forgotten %v after it was submitted, before the %v retention", gone, retention)
	}
}
