package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	taskrt "github.com/agora-sched/agora/runtime"
)

// TestTaskSandbox (issue 22): a task started by a root node runs as a
// user of its own, cannot read the node's identity or store or another
// task's directory, does not see the node's environment, has
// no_new_privs, and leaves no process behind (a setsid child included).
func TestTaskSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a node switches task users only as root")
	}
	base := t.TempDir()
	// A node's data directory must be reachable by its tasks' users; the
	// test's temporary directories are their owner's only.
	for d := base; d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	data := filepath.Join(base, "data")
	t.Setenv("AGORA_E2E_NODE_SECRET", "leaked")
	p := startNode(t, data, "--task-user", "auto")
	marker := "311." + strconv.Itoa(os.Getpid())
	check := strings.Join([]string{
		"sleep 1",
		`[ "$(id -u)" != 0 ] || exit 10`,
		"if cat " + data + "/identity.key >/dev/null 2>&1; then exit 11; fi",
		"if ls " + data + "/db >/dev/null 2>&1; then exit 12; fi",
		"if cat " + data + "/tasks/$AGORA_JOB_ID/a.0/work/own >/dev/null 2>&1; then exit 13; fi",
		"if env | grep -q AGORA_E2E_NODE_SECRET; then exit 14; fi",
		"grep -q 'NoNewPrivs:.*1' /proc/self/status || exit 15",
		"setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &",
		"sleep 0.5",
	}, "\n")
	spec, _ := json.Marshal(map[string]any{"name": "sandbox", "tasks": []map[string]any{
		{"name": "a", "command": []string{"sh", "-c", "echo mine > own; sleep 3"}},
		{"name": "b", "command": []string{"sh", "-c", check}},
	}})
	file := writeFile(t, "sandbox.json", string(spec))
	out, errOut, code := agora(t, "submit", "--api", p.api, "--wait", "--json", file)
	if code != 0 {
		logs, _, _ := agora(t, "logs", "--api", p.api, jobID(out))
		t.Fatalf("the sandbox job failed (exit 10-15 name the check in the script): %d\n%s\n%s\n%s", code, out, errOut, logs)
	}
	id := jobID(out)
	if _, err := os.Stat(filepath.Join(data, "tasks", id, "a.0", "work", "own")); err != nil {
		t.Fatalf("task a's file is not where task b looked for it: %v", err)
	}
	// Nothing of the job runs on: the setsid child was killed with b.
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind by the job: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// jobID finds a job's ID in submit's output.
func jobID(out string) string {
	var r struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(out), &r) == nil && r.ID != "" {
		return r.ID
	}
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "j-") {
			return strings.Trim(f, `",`)
		}
	}
	return ""
}

// processesWith lists the pids whose command line holds s.
func processesWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// TestTaskNamespacesNode (issue 22): a node started with
// --task-namespaces runs each task in namespaces of its own: a private
// /tmp (the host's files there unseen, its own directory still at its
// path), a /proc with only its processes, and its own user still.
func TestTaskNamespacesNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: task namespaces and task users need root")
	}
	base := t.TempDir()
	for d := base; d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	hostFile := filepath.Join("/tmp", "agora-e2e-host-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(hostFile, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hostFile) })
	if err := taskrt.CheckNamespaces(agoraBin); err != nil {
		t.Skipf("task namespaces are not available here: %v", err)
	}
	p := startNode(t, filepath.Join(base, "data"), "--task-namespaces")
	check := strings.Join([]string{
		`[ "$(id -u)" != 0 ] || exit 10`,
		"if [ -e " + hostFile + " ]; then exit 20; fi",
		"echo mine > /tmp/f && [ \"$(cat /tmp/f)\" = mine ] || exit 21",
		"[ $$ -lt 64 ] || exit 22",
		"[ $(ls /proc | grep -c '^[0-9]') -lt 10 ] || exit 23",
		"echo out > $PWD/out || exit 24",
	}, "\n")
	out, errOut, code := agora(t, "run", "--api", p.api, "--wait", "--json", "--", "sh", "-c", check)
	if code != 0 {
		logs, _, _ := agora(t, "logs", "--api", p.api, jobID(out))
		t.Fatalf("the namespaces job failed (exit 10-24 name the check in the script): %d\n%s\n%s\n%s", code, out, errOut, logs)
	}
	if _, err := os.Stat("/tmp/f"); err == nil {
		if b, _ := os.ReadFile("/tmp/f"); string(b) == "mine\n" {
			t.Fatal("the task's /tmp/f is in the host's /tmp")
		}
	}
}
