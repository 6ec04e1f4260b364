package testnet

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// waitJob polls a job on nd until it is terminal.
func waitJob(t *testing.T, nd *Node, id string, d time.Duration) api.JobStatus {
	t.Helper()
	var s api.JobStatus
	waitfor.Cond(t, d, "job "+id+" to finish", func() bool {
		var err error
		s, err = nd.Status(id)
		return err == nil && (s.State == "succeeded" || s.State == "failed" || s.State == "cancelled")
	})
	return s
}

func fastRetries(_ int, c *node.Config) {
	c.Market.RetryBase = 100 * time.Millisecond
	c.Market.RetryMax = 500 * time.Millisecond
}

// TestGPUTaskPlacedAndInspectedFromAnyPeer: a GPU task sent to A (no GPU)
// runs on B (two A100s); C answers status and logs.
func TestGPUTaskPlacedAndInspectedFromAnyPeer(t *testing.T) {
	net := New(t, 3, Options{Resources: resourcesABC})
	net.WaitConverged(10 * time.Second)
	a, b, c := net.Node(0), net.Node(1), net.Node(2)
	id, err := a.Submit(`{"name": "gpu", "tasks": [{"name": "main", "command": ["sh", "-c", "echo gpu=$CUDA_VISIBLE_DEVICES"], "resources": {"cpu": 1, "gpu": 1}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, a, id, 20*time.Second)
	if s.State != "succeeded" {
		t.Fatalf("job %s: %+v", s.State, s)
	}
	sc, err := c.Status(id)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Tasks[0].Node != b.ID().String() {
		t.Fatalf("status from C names node %s, want B %s", sc.Tasks[0].Node, b.ID())
	}
	lg, err := c.Logs(id, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Logs) != 1 || !(strings.Contains(lg.Logs[0].Data, "gpu=0") || strings.Contains(lg.Logs[0].Data, "gpu=1")) {
		t.Fatalf("logs from C: %+v", lg)
	}
}

// TestBurstMakespan: 40 × (2 CPU, sleep 1) on 4+16+8 CPUs: every task
// succeeds, no node runs more CPU than it has, and the makespan is at
// most 1.5 × the wave lower bound.
func TestBurstMakespan(t *testing.T) {
	net := New(t, 3, Options{Resources: resourcesABC})
	net.WaitConverged(10 * time.Second)
	var tasks []string
	for i := 0; i < 40; i++ {
		tasks = append(tasks, fmt.Sprintf(`{"name": "t%02d", "command": ["sleep", "1"], "resources": {"cpu": 2}}`, i))
	}
	start := time.Now()
	id, err := net.Node(0).Submit(`{"name": "burst", "tasks": [` + strings.Join(tasks, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 60*time.Second)
	makespan := time.Since(start)
	if s.State != "succeeded" {
		t.Fatalf("job %s: %s", s.State, s.Reason)
	}
	// Lower bound: 80 CPU-seconds on 28 CPUs, in whole waves of 1 s:
	// 14 slots → ceil(40/14) = 3 waves.
	bound := 3 * time.Second
	ratio := makespan.Seconds() / bound.Seconds()
	t.Logf("makespan %v = %.2f × the %v lower bound", makespan.Round(time.Millisecond), ratio, bound)
	if ratio > 1.25 || testing.Verbose() {
		for _, e := range net.Node(0).Events(id) {
			t.Log(e)
		}
	}
	if ratio > 1.5 {
		t.Fatalf("makespan %v is %.2f × the lower bound %v (limit 1.5)", makespan, ratio, bound)
	}
	caps := map[string]int{net.Node(0).ID().String(): 4, net.Node(1).ID().String(): 16, net.Node(2).ID().String(): 8}
	for _, nd := range net.Up() {
		peak, n := nd.PeakCPU(id)
		t.Logf("node %d ran %d tasks, peak %d CPUs of %d", nd.Index, n, peak, caps[nd.ID().String()])
		if peak > caps[nd.ID().String()] {
			t.Fatalf("node %d ran %d CPUs at once, has %d", nd.Index, peak, caps[nd.ID().String()])
		}
	}
}

// TestUnplaceable: a 200 GiB GPU fails at its job's pending timeout
// (10 s), within 15 s, naming the timeout and the GPU memory requirement,
// and nothing runs.
func TestUnplaceable(t *testing.T) {
	net := New(t, 3, Options{Resources: resourcesABC})
	net.WaitConverged(10 * time.Second)
	start := time.Now()
	id, err := net.Node(0).Submit(`{"name": "huge", "pending_timeout": "10s", "tasks": [{"name": "main", "command": ["true"], "resources": {"gpu": {"count": 1, "memory": "200GiB"}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 15*time.Second)
	t.Logf("failed after %v: %s", time.Since(start).Round(time.Millisecond), s.Reason)
	if s.State != "failed" || !strings.Contains(s.Reason, "gpu memory") || !strings.Contains(s.Reason, "pending_timeout (10s)") {
		t.Fatalf("state %s reason %q", s.State, s.Reason)
	}
	for _, nd := range net.Up() {
		if _, n := nd.PeakCPU(id); n != 0 {
			t.Fatalf("node %d ran %d tasks of the job", nd.Index, n)
		}
	}
}

// TestRetries: a task failing twice succeeds on attempt 3; one that
// always fails ends failed with its exit code and reason.
func TestRetries(t *testing.T) {
	net := New(t, 3, Options{Configure: fastRetries})
	net.WaitConverged(10 * time.Second)
	counter := filepath.Join(t.TempDir(), "attempts")
	flaky := fmt.Sprintf(`{"name": "flaky", "tasks": [{"name": "main", "command": ["sh", "-c", "n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s; echo attempt $n; [ $n -ge 3 ] || exit 3"]}]}`, counter, counter)
	id, err := net.Node(0).Submit(flaky)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 30*time.Second)
	if s.State != "succeeded" || s.Tasks[0].Attempts != 3 {
		t.Fatalf("flaky: state %s attempts %d reason %q", s.State, s.Tasks[0].Attempts, s.Reason)
	}
	id, err = net.Node(0).Submit(`{"name": "bad", "tasks": [{"name": "main", "command": ["sh", "-c", "echo doomed; exit 3"], "retries": 2}]}`)
	if err != nil {
		t.Fatal(err)
	}
	s = waitJob(t, net.Node(0), id, 30*time.Second)
	if s.State != "failed" || s.Tasks[0].ExitCode != 3 || s.Tasks[0].Attempts != 3 || !strings.Contains(s.Reason, "exit code 3") {
		t.Fatalf("bad: state %s exit %d attempts %d reason %q", s.State, s.Tasks[0].ExitCode, s.Tasks[0].Attempts, s.Reason)
	}
}

// TestDAGAndCycle: a → b, a → c, {b, c} → d run in order; a cycle is
// refused at submit.
func TestDAGAndCycle(t *testing.T) {
	net := New(t, 2, Options{})
	net.WaitConverged(10 * time.Second)
	dir := t.TempDir()
	step := func(name string, after ...string) string {
		dep := ""
		if len(after) > 0 {
			dep = `, "after": ["` + strings.Join(after, `", "`) + `"]`
		}
		return fmt.Sprintf(`{"name": %q, "command": ["sh", "-c", "date +%%s%%N > %s/%s.start; sleep 0.2; date +%%s%%N > %s/%s.end"]%s}`, name, dir, name, dir, name, dep)
	}
	id, err := net.Node(1).Submit(`{"name": "dag", "tasks": [` + strings.Join([]string{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := waitJob(t, net.Node(1), id, 30*time.Second); s.State != "succeeded" {
		t.Fatalf("dag: %s %s", s.State, s.Reason)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%020s", strings.TrimSpace(string(b)))
	}
	for _, e := range [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}} {
		if read(e[1]+".start") < read(e[0]+".end") {
			t.Fatalf("%s started before %s ended", e[1], e[0])
		}
	}
	code, body, err := net.Node(0).API("POST", "/v1/jobs", []byte(`{"name": "cyc", "tasks": [{"name": "x", "command": ["true"], "after": ["y"]}, {"name": "y", "command": ["true"], "after": ["x"]}]}`))
	if err != nil || code != 400 || !strings.Contains(string(body), "cycle") {
		t.Fatalf("cycle submit: %d %s %v", code, body, err)
	}
}

// TestPreemption: with every CPU held by priority-1 tasks, a priority-9
// task starts within 5 s, and the evicted tasks still finish.
func TestPreemption(t *testing.T) {
	net := New(t, 2, Options{Resources: func(int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" }})
	net.WaitConverged(10 * time.Second)
	var low []string
	for i := 0; i < 4; i++ {
		low = append(low, fmt.Sprintf(`{"name": "l%d", "command": ["sleep", "3"], "resources": {"cpu": 1}}`, i))
	}
	lowID, err := net.Node(0).Submit(`{"name": "low", "priority": 1, "tasks": [` + strings.Join(low, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 10*time.Second, "all four low tasks to run", func() bool {
		s, err := net.Node(0).Status(lowID)
		if err != nil {
			return false
		}
		n := 0
		for _, tk := range s.Tasks {
			if tk.State == "running" {
				n++
			}
		}
		return n == 4
	})
	start := time.Now()
	highID, err := net.Node(1).Submit(`{"name": "high", "priority": 9, "tasks": [{"name": "h", "command": ["sleep", "0.5"], "resources": {"cpu": 1}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 5*time.Second, "the priority-9 task to start", func() bool {
		s, err := net.Node(1).Status(highID)
		return err == nil && (s.Tasks[0].State == "running" || s.Tasks[0].State == "succeeded")
	})
	t.Logf("priority-9 task started %v after submit", time.Since(start).Round(time.Millisecond))
	if s := waitJob(t, net.Node(0), lowID, 30*time.Second); s.State != "succeeded" {
		t.Fatalf("low job %s: %s", s.State, s.Reason)
	}
	s, _ := net.Node(0).Status(lowID)
	re := 0
	for _, tk := range s.Tasks {
		if tk.Attempts > 1 {
			re++
		}
	}
	if re == 0 {
		t.Fatal("no low-priority task was preempted and run again")
	}
}

// TestRestartKeepsJobs: a node restarted on its data dir still has its
// jobs, their states and logs.
func TestRestartKeepsJobs(t *testing.T) {
	net := New(t, 1, Options{})
	id, err := net.Node(0).Submit(`{"name": "hello", "tasks": [{"name": "main", "command": ["sh", "-c", "echo hello from agora"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := waitJob(t, net.Node(0), id, 20*time.Second); s.State != "succeeded" {
		t.Fatalf("job %s", s.State)
	}
	t0 := time.Now()
	net.Stop(0)
	t.Logf("stop took %v", time.Since(t0))
	t0 = time.Now()
	nd := net.Restart(0)
	t.Logf("restart took %v", time.Since(t0))
	s, err := nd.Status(id)
	if err != nil || s.State != "succeeded" || s.Tasks[0].State != "succeeded" {
		t.Fatalf("after restart: %+v %v", s, err)
	}
	lg, err := nd.Logs(id, "")
	if err != nil || len(lg.Logs) != 1 || !strings.Contains(lg.Logs[0].Data, "hello from agora") {
		t.Fatalf("logs after restart: %+v %v", lg, err)
	}
}

var _ = sort.Strings
