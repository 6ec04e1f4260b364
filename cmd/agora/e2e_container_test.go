package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/runtime/containertest"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// e2eEngine is the host's container engine, or skips the test saying
// why there is none.
func e2eEngine(t *testing.T) *runtime.ContainerRuntime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("container tests run as root (CI does)")
	}
	rt, err := runtime.DetectContainerRuntime(context.Background(), runtime.ContainerAuto)
	if rt == nil {
		t.Skipf("no container engine works here (make testdeps installs podman and runc as root): %v", err)
	}
	return rt
}

// taskOf is the status of task name's replica 0.
func taskOf(st jobStatus, name string) (taskStatus, bool) {
	for _, tk := range st.Tasks {
		if tk.Name == name && tk.Replica == 0 {
			return tk, true
		}
	}
	return taskStatus{}, false
}

// TestE2EContainerPipeline (issue 45, done-when 1 and 3): node A has the
// host's engine, node B runs with --container-runtime none. A job's
// first task runs in a busybox image and writes out.bin; its second, a
// plain process, must run on B and reads it: the hashes agree, the image
// task ran on A (B, without an engine, is never given it), and its logs,
// exit code and agora get work as for a process. A job whose image
// task only B could run waits with a reason naming the missing runtime,
// then fails saying so, and an image task's exit code comes back as a
// process's does.
func TestE2EContainerPipeline(t *testing.T) {
	rt := e2eEngine(t)
	ref, id := containertest.Busybox(t, rt.Path)
	c := &e2eCluster{}
	a := startNode(t, t.TempDir(), "--label", "role=a")
	b := startNode(t, t.TempDir(), "--label", "role=b", "--container-runtime", "none", "--bootstrap", tcpAddr(t, a.id()))
	c.nodes, c.ids = []*proc{a, b}, []string{a.id().PeerID, b.id().PeerID}
	c.converge(t, 20*time.Second)
	c.dumpLogs(t)

	out, errs, code := agora(t, "peers", "--api", b.api)
	if code != 0 || !strings.Contains(out, "CONTAINERS") || !strings.Contains(out, rt.Name) {
		t.Fatalf("agora peers on B does not show A's engine %s: exit %d\n%s%s", rt.Name, code, out, errs)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "job.yaml")
	specText := fmt.Sprintf(`
name: boxed
tasks:
  - name: make
    image: %s
    command: "head -c 1048576 /dev/urandom > out.bin && sha256sum out.bin && echo in-the-box >&2"
    outputs: [out.bin]
  - name: use
    after: [make]
    inputs: [{from: make, path: out.bin}]
    command: "sha256sum out.bin"
    resources: {labels: {role: b}}
`, ref)
	if err := os.WriteFile(file, []byte(specText), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = agora(t, "submit", "--api", a.api, "--json", file)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	job := jobID(out)
	waitfor.Every(t, 90*time.Second, apiPoll, "the job to end", func() bool { return terminal(e2eStatus(t, a.api, job).State) })
	st := e2eStatus(t, a.api, job)
	if st.State != "succeeded" {
		logs, errs, _ := agora(t, "logs", "--api", a.api, "--task", "make", job)
		t.Fatalf("job %s: %s (%+v)\nmake's output: %s%s", st.State, st.Reason, st.Tasks, logs, errs)
	}
	mk, _ := taskOf(st, "make")
	use, _ := taskOf(st, "use")
	if mk.Node != c.ids[0] || use.Node != c.ids[1] || mk.ExitCode != 0 {
		t.Fatalf("make ran on %s (exit %d), use on %s: want A %s, B %s", mk.Node, mk.ExitCode, use.Node, c.ids[0], c.ids[1])
	}
	logOf := func(task string) (string, string) {
		out, errs, code := agora(t, "logs", "--api", b.api, "--task", task, job)
		if code != 0 {
			t.Fatalf("logs %s: %s", task, errs)
		}
		return out, errs
	}
	makeOut, makeErr := logOf("make")
	useOut, _ := logOf("use")
	made, used := hashesIn(makeOut), hashesIn(useOut)
	if made["out.bin"] == "" || used["out.bin"] != made["out.bin"] {
		t.Fatalf("use saw out.bin %q, make wrote %q", used["out.bin"], made["out.bin"])
	}
	if !strings.Contains(makeOut+makeErr, "in-the-box") { // agora logs prints both streams in order
		t.Fatalf("make's log %q lacks its stderr line", makeOut+makeErr)
	}
	into := filepath.Join(t.TempDir(), "got")
	if out, errs, code := agora(t, "get", "--api", b.api, "--task", "make", "--out", into, job); code != 0 {
		t.Fatalf("agora get: exit %d: %s %s", code, out, errs)
	}
	if got := sha256File(t, filepath.Join(into, "out.bin")); got != made["out.bin"] {
		t.Fatalf("agora get: out.bin %s, make wrote %s", got, made["out.bin"])
	}
	out, _, _ = agora(t, "status", "--api", a.api, "--json", job)
	t.Logf("pinned to %s", id)

	// An image task's exit code, as a process's.
	out, errs, code = agora(t, "run", "--api", a.api, "--json", "--image", ref, "--retries", "0", "--", "sh", "-c", "exit 3")
	if code != 0 {
		t.Fatalf("run --image: exit %d: %s %s", code, out, errs)
	}
	failed := jobID(out)
	waitfor.Every(t, 60*time.Second, apiPoll, "the failing job to end", func() bool { return terminal(e2eStatus(t, a.api, failed).State) })
	if tk, _ := taskOf(e2eStatus(t, a.api, failed), "main"); tk.State != "failed" || tk.ExitCode != 3 {
		t.Fatalf("an image task that exits 3: %+v", tk)
	}

	// Only B may run it (role=b), and B has no engine: the job waits,
	// then fails at its pending_timeout, naming the runtime. B cannot pin
	// it either; the ID is given.
	bad := filepath.Join(dir, "onlyb.yaml")
	if err := os.WriteFile(bad, []byte(fmt.Sprintf(`
name: onlyb
pending_timeout: 10s
tasks:
  - name: t
    image: %s
    image_id: %s
    command: "true"
    resources: {labels: {role: b}}
`, ref, id)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = agora(t, "submit", "--api", b.api, "--json", bad)
	if code != 0 {
		t.Fatalf("submit onlyb: exit %d: %s %s", code, out, errs)
	}
	onlyB := jobID(out)
	// While it waits, its task says why (then it fails at its pending
	// timeout, saying the same).
	var waiting string
	waitfor.Every(t, 60*time.Second, apiPoll, "the unplaceable task's waiting reason", func() bool {
		st := e2eStatus(t, b.api, onlyB)
		tk, _ := taskOf(st, "t")
		waiting = tk.Waiting
		return strings.Contains(waiting, "no container runtime") || terminal(st.State)
	})
	if !strings.Contains(waiting, "no container runtime") {
		t.Fatalf("the job ended before its task's waiting reason named the runtime (last: %q)", waiting)
	}
	waitfor.Every(t, 60*time.Second, apiPoll, "the unplaceable job to end", func() bool { return terminal(e2eStatus(t, b.api, onlyB).State) })
	st = e2eStatus(t, b.api, onlyB)
	tk, _ := taskOf(st, "t")
	if tk.Node != "" && tk.Node != c.ids[0] {
		t.Fatalf("B, without an engine, was given an image task: %+v", tk)
	}
	if !strings.Contains(st.Reason+tk.Reason, "no container runtime") {
		t.Fatalf("job %s: reason %q / %q does not name the missing runtime", st.State, st.Reason, tk.Reason)
	}
	// Asking B to pin an image fails, saying why.
	if _, errs, code := agora(t, "run", "--api", b.api, "--image", ref, "--", "true"); code != exitBadUsage || !strings.Contains(errs, "no container runtime") {
		t.Fatalf("run --image through a node without an engine: exit %d: %s", code, errs)
	}
}
