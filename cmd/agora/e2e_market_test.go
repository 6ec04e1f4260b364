package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// End-to-end tests of the market: jobs submitted to one real `agora node`
// process are placed by auction on another, and read back through a third.
// They reuse the helpers of e2e_test.go (startNode, agora, waitFor, ...).

// Resource files of the three-node network: A and C have CPUs only, B has
// the two GPUs.
const (
	e2eResA = "cpu: 4\nmemory: 8GiB\ngpus: []\n"
	e2eResB = "cpu: 16\nmemory: 64GiB\ngpus:\n  - {model: A100, memory: 40GiB}\n  - {model: A100, memory: 40GiB}\n"
	e2eResC = "cpu: 8\nmemory: 16GiB\ngpus: []\n"
)

// e2eCluster is a set of running nodes and their peer IDs, in start order.
type e2eCluster struct {
	nodes []*proc
	ids   []string
}

// startE2EChain starts one node per resource file, each after the first
// bootstrapping from the node before it (A ← B ← C ...), and waits until
// every node lists all the others.
func startE2EChain(t *testing.T, resources ...string) *e2eCluster {
	t.Helper()
	c := &e2eCluster{}
	for i, body := range resources {
		args := []string{"--resources", writeFile(t, fmt.Sprintf("r%d.yaml", i), body), "--site", fmt.Sprintf("s%d", i)}
		if i > 0 {
			args = append(args, "--bootstrap", tcpAddr(t, c.nodes[i-1].id()))
		}
		p := startNode(t, t.TempDir(), args...)
		c.nodes = append(c.nodes, p)
		c.ids = append(c.ids, p.id().PeerID)
	}
	c.converge(t, 15*time.Second)
	return c
}

// converge waits until every node lists all the others.
func (c *e2eCluster) converge(t *testing.T, d time.Duration) {
	t.Helper()
	start := time.Now()
	waitfor.Every(t, d, apiPoll, "every node to list all the others", func() bool {
		for i, n := range c.nodes {
			ps := n.peers()
			for j := range c.nodes {
				if _, ok := ps[c.ids[j]]; i != j && !ok {
					return false
				}
			}
		}
		return true
	})
	t.Logf("%d nodes converged in %v", len(c.nodes), time.Since(start))
}

// dumpLogs prints every node's output when the test failed.
func (c *e2eCluster) dumpLogs(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, n := range c.nodes {
			t.Logf("--- node %d (%s) output:\n%s", i, c.ids[i], n.log.String())
		}
	})
}

// e2eStatus runs `agora status --json` and decodes it.
func e2eStatus(t *testing.T, api, id string) jobStatus {
	t.Helper()
	return e2eStatusAs(t, api, "", id)
}

// e2eStatusAs is e2eStatus signed with a user's credential (none: "").
func e2eStatusAs(t *testing.T, api, cred, id string) jobStatus {
	t.Helper()
	args := []string{"status", "--api", api, "--json", id}
	if cred != "" {
		args = append(args, "--credential", cred)
	}
	out, errs, code := agora(t, args...)
	if code != 0 {
		t.Fatalf("agora status --json %s: exit %d: %s", id, code, errs)
	}
	var st jobStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("agora status --json: %v:\n%s", err, out)
	}
	return st
}

// TestE2EGPURouting: a GPU job submitted to a CPU-only node runs on the one
// node with GPUs, with CUDA_VISIBLE_DEVICES naming the GPU it was given;
// a third node that took no part finds its status and logs.
func TestE2EGPURouting(t *testing.T) {
	c := startE2EChain(t, e2eResA, e2eResB, e2eResC)
	c.dumpLogs(t)
	a, b, cc := c.nodes[0], c.ids[1], c.nodes[2]

	start := time.Now()
	out, errs, code := agora(t, "run", "--api", a.api, "--gpu", "1", "--wait", "--json", "--", "sh", "-c", "echo gpu=$CUDA_VISIBLE_DEVICES")
	if code != 0 {
		t.Fatalf("agora run --gpu 1 --wait: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Logf("GPU job ran in %v; progress:\n%s", time.Since(start), errs)
	var r struct {
		ID string `json:"id"`
	}
	first, output, _ := strings.Cut(out, "\n") // --json --wait: the ID, then the task's output
	if err := json.Unmarshal([]byte(first), &r); err != nil || r.ID == "" {
		t.Fatalf("agora run --json printed %q, want {\"id\": ...} first (%v)", out, err)
	}
	if !strings.HasPrefix(output, "gpu=") {
		t.Fatalf("agora run --wait printed %q after the ID, want the task's output", output)
	}

	st := e2eStatus(t, cc.api, r.ID)
	if st.ID != r.ID || st.State != "succeeded" {
		t.Fatalf("status via C: id %q state %q, want %q succeeded", st.ID, st.State, r.ID)
	}
	if st.Manager != c.ids[0] {
		t.Errorf("manager is %q, want A %s", st.Manager, c.ids[0])
	}
	if len(st.Tasks) != 1 {
		t.Fatalf("status has %d tasks, want 1: %+v", len(st.Tasks), st.Tasks)
	}
	if tk := st.Tasks[0]; tk.Node != b || tk.State != "succeeded" || tk.Attempts != 1 {
		t.Fatalf("task %+v: want succeeded on B %s in 1 attempt", tk, b)
	}

	logs, errs, code := agora(t, "logs", "--api", cc.api, r.ID)
	if code != 0 {
		t.Fatalf("agora logs via C: exit %d: %s", code, errs)
	}
	if got := strings.TrimSpace(logs); got != "gpu=0" && got != "gpu=1" {
		t.Fatalf("logs via C = %q, want gpu=0 or gpu=1", logs)
	}
}

// TestE2EUnplaceable: a task no node could ever hold fails once its
// job's pending_timeout (10 s) passes, and the failure names the unmet
// requirement of the closest node (B's GPUs have 40 GiB). Without one it
// would wait for such a node (TestE2EWaitForNode).
func TestE2EUnplaceable(t *testing.T) {
	c := startE2EChain(t, e2eResA, e2eResB)
	c.dumpLogs(t)
	spec := writeFile(t, "huge.yaml", `name: huge
pending_timeout: 10s
tasks:
  - name: train
    command: [sh, -c, "echo never"]
    resources:
      gpu: {count: 1, memory: 200GiB}
`)
	start := time.Now()
	out, errs, code := agora(t, "submit", "--api", c.nodes[0].api, "--wait", spec)
	took := time.Since(start)
	t.Logf("submit --wait ended in %v with exit %d; stderr:\n%s", took, code, errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if took > 15*time.Second {
		t.Errorf("took %v to fail, want within 15s", took)
	}
	if !strings.Contains(errs, "gpu memory") {
		t.Errorf("stderr does not name the GPU memory requirement (\"gpu memory\"):\n%s", errs)
	}
	id := strings.TrimSpace(out)
	if st := e2eStatus(t, c.nodes[1].api, id); st.State != "failed" || !strings.Contains(st.Reason, "gpu memory") {
		t.Errorf("status via B: state %q reason %q, want failed naming gpu memory", st.State, st.Reason)
	}
}

// TestE2ECycleRejected: specs that cannot be valid are refused with exit
// 2 and a line naming the problem, before anything is scheduled.
func TestE2ECycleRejected(t *testing.T) {
	n := startNode(t, t.TempDir())
	cases := []struct {
		name, body string
		want       []string
	}{
		{"cycle", `name: loop
tasks:
  - name: a
    command: [sh, -c, "true"]
    after: [b]
  - name: b
    command: [sh, -c, "true"]
    after: [a]
`, []string{"cycle"}},
		{"unknown field", `name: typo
tasks:
  - name: a
    command: [sh, -c, "true"]
    retires: 2
`, []string{"retires", "unknown field"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, "job.yaml", tc.body)
			out, errs, code := agora(t, "submit", "--api", n.api, f)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errs)
				}
			}
			if strings.TrimSpace(out) != "" {
				t.Errorf("stdout %q, want nothing (no job ID)", out)
			}
		})
	}
	// Nothing reached the node.
	jobs, errs, code := agora(t, "jobs", "--api", n.api, "--json")
	if code != 0 {
		t.Fatalf("agora jobs: exit %d: %s", code, errs)
	}
	var js []jobStatus
	if err := json.Unmarshal([]byte(jobs), &js); err != nil || len(js) != 0 {
		t.Fatalf("node holds jobs after rejected submits (%v):\n%s", err, jobs)
	}
}

// TestE2EFlakyRetries: a task that fails twice with exit 3 is retried
// (back-off 1 s, then 2 s) and succeeds on its third attempt.
func TestE2EFlakyRetries(t *testing.T) {
	c := startE2EChain(t, e2eResA, e2eResC)
	c.dumpLogs(t)
	counter := filepath.Join(sharedDir(t), "attempts") // each attempt may run under another user ID
	script := fmt.Sprintf(`umask 0; n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; echo attempt $n; [ $n -ge 3 ] || exit 3`, e2eShellQuote(counter))
	spec := writeFile(t, "flaky.json", e2eJSON(t, map[string]any{
		"name": "flaky",
		"tasks": []any{map[string]any{
			"name":    "main",
			"command": []string{"sh", "-c", script},
		}},
	}))
	start := time.Now()
	out, errs, code := agora(t, "submit", "--api", c.nodes[0].api, "--wait", spec)
	t.Logf("submit --wait ended in %v; progress:\n%s", time.Since(start), errs)
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	id := strings.TrimSpace(out)
	st := e2eStatus(t, c.nodes[0].api, id)
	if st.State != "succeeded" || len(st.Tasks) != 1 {
		t.Fatalf("status: state %q with %d tasks, want succeeded with 1", st.State, len(st.Tasks))
	}
	if tk := st.Tasks[0]; tk.Attempts != 3 || tk.State != "succeeded" || tk.ExitCode != 0 {
		t.Fatalf("task %+v: want succeeded with exit 0 after 3 attempts", tk)
	}
	b, err := os.ReadFile(counter)
	if err != nil || strings.TrimSpace(string(b)) != "3" {
		t.Fatalf("attempt counter %q (%v), want 3", b, err)
	}
	logs, errs, code := agora(t, "logs", "--api", c.nodes[0].api, id)
	if code != 0 || strings.TrimSpace(logs) != "attempt 3" {
		t.Fatalf("agora logs: exit %d, output %q (want the last attempt's \"attempt 3\"); stderr: %s", code, logs, errs)
	}
}

func e2eShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func e2eJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
