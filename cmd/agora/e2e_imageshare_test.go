package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/runtime/containertest"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// ownStorage points the engine commands this test and the nodes it
// starts run at a container storage of their own (vfs, in a temporary
// directory), so that two nodes on one host hold different images.
func ownStorage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "storage.conf")
	text := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "graph"), filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONTAINERS_STORAGE_CONF", conf)
	return filepath.Join(dir, "graph")
}

// TestE2EImageFromPeer (issue 45, done-when 4): no registry anywhere.
// Node A's engine holds an image, node B's storage is empty; a task only
// B may run (role=b) runs there after B fetched the image from A,
// checked against the pinned ID, and B's engine then holds it under that
// ID. Then the busybox in every layer of A's storage is damaged: a task
// with a second image fails on B, its reason naming that image's layer.
func TestE2EImageFromPeer(t *testing.T) {
	rt := e2eEngine(t)
	if rt.Name != "podman" {
		t.Skipf("the test gives each node its own storage through podman's CONTAINERS_STORAGE_CONF; the engine here is %s", rt.Name)
	}
	graphA := ownStorage(t)
	ref, id := containertest.Busybox(t, rt.Path)
	ref2, id2 := containertest.Busybox(t, rt.Path) // another ID; its layer's bytes may differ (file times)
	layer, err := exec.Command(rt.Path, "image", "inspect", "--format", "{{index .RootFS.Layers 0}}", ref2).Output()
	if err != nil {
		t.Fatal(err)
	}
	c := &e2eCluster{}
	a := startNode(t, t.TempDir(), "--label", "role=a")
	ownStorage(t)
	b := startNode(t, t.TempDir(), "--label", "role=b", "--bootstrap", tcpAddr(t, a.id()))
	c.nodes, c.ids = []*proc{a, b}, []string{a.id().PeerID, b.id().PeerID}
	c.converge(t, 20*time.Second)
	c.dumpLogs(t)
	if exec.Command(rt.Path, "image", "exists", id).Run() == nil {
		t.Fatalf("B's storage already holds %s: the test would prove nothing", id)
	}

	run := func(image string) (string, jobStatus) {
		t.Helper()
		dir := t.TempDir()
		file := filepath.Join(dir, "job.yaml")
		text := fmt.Sprintf(`
name: fetched
tasks:
  - name: t
    image: %s
    command: "echo ran-on-b && cat /bin/busybox | sha256sum"
    retries: 0
    resources: {labels: {role: b}}
`, image)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code := agora(t, "submit", "--api", a.api, "--json", file) // A pins it: B cannot
		if code != 0 {
			t.Fatalf("submit: exit %d: %s %s", code, out, errs)
		}
		job := jobID(out)
		waitfor.Every(t, 120*time.Second, apiPoll, "the job to end", func() bool { return terminal(e2eStatus(t, a.api, job).State) })
		return job, e2eStatus(t, a.api, job)
	}

	job, st := run(ref)
	tk, _ := taskOf(st, "t")
	if st.State != "succeeded" || tk.Node != c.ids[1] {
		logs, errs, _ := agora(t, "logs", "--api", b.api, "--task", "t", job)
		t.Fatalf("job %s: %s on %s (want B %s): %q / %q\n%s%s", job, st.State, tk.Node, c.ids[1], st.Reason, tk.Reason, logs, errs)
	}
	if out, _, _ := agora(t, "logs", "--api", b.api, "--task", "t", job); !strings.Contains(out, "ran-on-b") {
		t.Fatalf("task log %q", out)
	}
	if got, err := exec.Command(rt.Path, "image", "inspect", "--format", "{{.Id}}", id).Output(); err != nil || "sha256:"+strings.TrimPrefix(strings.TrimSpace(string(got)), "sha256:") != id {
		t.Fatalf("B's engine does not hold %s after the fetch: %v %s", id, err, got)
	}
	if !strings.Contains(b.log.String(), "image fetched") {
		t.Fatalf("B's log does not record the fetch")
	}

	// Damage the layer in A's storage (one byte of busybox, same size).
	bins, _ := filepath.Glob(filepath.Join(graphA, "vfs", "dir", "*", "bin", "busybox"))
	if len(bins) == 0 {
		t.Fatalf("no layer with bin/busybox under %s", graphA)
	}
	for _, f := range bins {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(f, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	job, st = run(ref2)
	tk, _ = taskOf(st, "t")
	want := strings.TrimSpace(string(layer))
	if st.State != "failed" || !strings.Contains(st.Reason+tk.Reason, want) {
		t.Fatalf("job %s with a damaged layer on A: %s, reason %q / %q: want it failed naming layer %s", job, st.State, st.Reason, tk.Reason, want)
	}
	if exec.Command(rt.Path, "image", "exists", id2).Run() == nil {
		t.Fatalf("B's engine holds %s, made of a damaged layer", id2)
	}
	t.Logf("reason: %s", tk.Reason)
}

// startRegistry runs Debian's docker-registry on 127.0.0.1 with its
// storage in a temporary directory, and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("no docker-registry (Debian's docker-registry; make testdeps installs it as root)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yml")
	text := fmt.Sprintf("version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", conf)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitfor.Cond(t, 20*time.Second, "the registry to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return addr
}

// TestE2EImagePull (issue 45): an image no peer holds is pulled from the
// registry its reference names (Debian's docker-registry on 127.0.0.1),
// checked against the pinned ID, and run; a tag that moved to another
// image in the registry fails the task naming both IDs.
func TestE2EImagePull(t *testing.T) {
	rt := e2eEngine(t)
	if rt.Name != "podman" {
		t.Skipf("the test gives the node its own storage through podman's CONTAINERS_STORAGE_CONF; the engine here is %s", rt.Name)
	}
	reg := startRegistry(t)
	ownStorage(t) // what is made and pushed here, the node does not hold
	ref, id := containertest.Busybox(t, rt.Path)
	_, other := containertest.Busybox(t, rt.Path)
	remote, moved := reg+"/agora-test/busybox:1", reg+"/agora-test/busybox:moved"
	for src, dst := range map[string]string{ref: remote, other: moved} {
		if out, err := exec.Command(rt.Path, "push", "--tls-verify=false", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("push %s: %v: %s", dst, err, out)
		}
	}
	ownStorage(t)
	// The bound holds one of these images (2 MB each), not two.
	n := startNode(t, t.TempDir(), "--image-cache-limit", "3MiB")
	if exec.Command(rt.Path, "image", "exists", id).Run() == nil {
		t.Fatalf("the node's storage already holds %s", id)
	}
	run := func(image, id string) (string, jobStatus) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "job.yaml")
		text := fmt.Sprintf("name: pulled\ntasks:\n  - name: t\n    image: %s\n    image_id: %s\n    retries: 0\n    command: \"echo pulled-and-ran\"\n", image, id)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code := agora(t, "submit", "--api", n.api, "--json", file)
		if code != 0 {
			t.Fatalf("submit: exit %d: %s %s", code, out, errs)
		}
		job := jobID(out)
		waitfor.Every(t, 120*time.Second, apiPoll, "the job to end", func() bool { return terminal(e2eStatus(t, n.api, job).State) })
		return job, e2eStatus(t, n.api, job)
	}
	job, st := run(moved, id) // pinned to id, but the registry's tag is other: before id is here
	if want := "is " + other + ", the job was pinned to " + id; st.State != "failed" || !strings.Contains(st.Reason, want) {
		t.Fatalf("job %s whose tag moved: %s, reason %q, want it failed with %q", job, st.State, st.Reason, want)
	}
	job, st = run(remote, id)
	if st.State != "succeeded" {
		t.Fatalf("job %s: %s: %q\n%s", job, st.State, st.Reason, n.log.String())
	}
	if out, _, _ := agora(t, "logs", "--api", n.api, job); !strings.Contains(out, "pulled-and-ran") {
		t.Fatalf("task log %q", out)
	}
	if exec.Command(rt.Path, "image", "exists", id).Run() != nil {
		t.Fatalf("the node's engine does not hold %s after the pull", id)
	}

	// A second image pulled takes the cache past its bound: the first,
	// least recently used, goes; an image put there by hand stays.
	byHand, handID := containertest.Busybox(t, rt.Path)
	job, st = run(moved, other)
	if st.State != "succeeded" {
		t.Fatalf("job %s: %s: %q", job, st.State, st.Reason)
	}
	waitfor.Cond(t, 20*time.Second, "the first image to be removed", func() bool {
		return exec.Command(rt.Path, "image", "exists", id).Run() != nil
	})
	for _, keep := range []string{other, handID} {
		if exec.Command(rt.Path, "image", "exists", keep).Run() != nil {
			t.Fatalf("%s was removed; want only %s (%s by hand)", keep, id, byHand)
		}
	}
}
