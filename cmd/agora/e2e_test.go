package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// These tests run the real binary on loopback: several `agora node`
// processes and the client commands against them.

var agoraBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agora-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agoraBin = filepath.Join(dir, "agora")
	// The nodes publish their API tokens here, and the commands find them
	// here: not in the home directory of whoever runs the tests.
	os.Setenv("AGORA_TOKEN_DIR", filepath.Join(dir, "tokens"))
	// Built as `make build` builds it (its version stamp included),
	// or plainly where make is missing.
	build := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+agoraBin)
	if _, err := exec.LookPath("make"); err != nil {
		build = exec.Command("go", "build", "-o", agoraBin, ".")
	}
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build agora: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one running `agora node`.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	data string
	api  string
	log  *syncBuffer
	// cred, in a network with an authority, is the credential file the
	// test helpers read the node's peers with (trustedNode's reader).
	cred string
}

// syncBuffer is the output of a node process, read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startNode starts `agora node` with the given extra flags and waits until
// its API answers.
func startNode(t testing.TB, data string, args ...string) *proc {
	t.Helper()
	p, err := launchNode(t, data, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// errAddrInUse is launchNode's answer when the node's --listen address
// was taken: a port seen free a moment earlier can be, by another test.
var errAddrInUse = errors.New("listen address in use")

// launchNode is startNode returning its failure instead of ending the test.
func launchNode(t testing.TB, data string, args ...string) (*proc, error) {
	t.Helper()
	// --allow-unenforced-limits: the tests pass where cgroups are not
	// writable (where they are, it changes nothing); a test may give
	// --allow-unenforced-limits=false after it.
	return launchNodeFlags(t, data, append([]string{"--no-nvml", "--advert-interval", "300ms", "--allow-unenforced-limits"}, args...)...)
}

// launchNodeFlags starts a node with only the flags given, besides its
// data directory and its API and listen addresses on 127.0.0.1: a node
// as a user runs it, for the measurements that predict one.
func launchNodeFlags(t testing.TB, data string, args ...string) (*proc, error) {
	t.Helper()
	traversable(t, data)
	full := append([]string{"node", "--data", data, "--api", "127.0.0.1:0"}, args...)
	if !hasFlag(args, "--listen") {
		full = append(full, "--listen", "/ip4/127.0.0.1/tcp/0")
	}
	return launchArgs(t, data, full...)
}

// launchArgs runs agora with exactly args — a node whose data directory
// is data, however args name it — and waits until its API answers.
func launchArgs(t testing.TB, data string, args ...string) (*proc, error) {
	t.Helper()
	cmd := exec.Command(agoraBin, args...)
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	_ = os.Remove(filepath.Join(data, "api.addr"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, data: data, log: &buf}
	t.Cleanup(p.kill)
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(data, "api.addr"))
		if err == nil && len(b) > 0 {
			p.api = strings.TrimSpace(string(b))
			return p, nil
		}
		if strings.Contains(buf.String(), "address already in use") {
			p.kill()
			return nil, errAddrInUse
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("node did not write api.addr in 15s; output:\n%s", buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// traversable lets other users pass through the directories above data
// that the test made (t.TempDir makes them 0700), as an operator's
// /var/lib does: a root node's tasks run under user IDs of their own and
// must reach their directories under data.
func traversable(t testing.TB, data string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Dir(filepath.Clean(data)); strings.HasPrefix(d, tmp+"/"); d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return // made by the node
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f {
			return true
		}
	}
	return false
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// agora runs a client command and returns stdout and the exit code.
func agora(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	return runCLI(t, exec.Command(agoraBin, args...))
}

// runCLI runs a client command and returns stdout, stderr and the exit
// code.
func runCLI(t testing.TB, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

type idJSON struct {
	PeerID string   `json:"peer_id"`
	Addrs  []string `json:"addrs"`
}

func (p *proc) id() idJSON {
	p.t.Helper()
	out, errs, code := agora(p.t, "id", "--json", "--api", p.api)
	if code != 0 {
		p.t.Fatalf("agora id: exit %d: %s", code, errs)
	}
	var r idJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		p.t.Fatalf("agora id --json: %v: %s", err, out)
	}
	return r
}

type peerJSON struct {
	PeerID   string `json:"peer_id"`
	Site     string `json:"site"`
	Capacity struct {
		CPU  float64 `json:"cpu"`
		GPUs []struct {
			Model  string `json:"model"`
			Memory int64  `json:"memory"`
		} `json:"gpus"`
	} `json:"capacity"`
	LastSeen string `json:"last_seen"`
}

func (p *proc) peers() map[string]peerJSON {
	p.t.Helper()
	args := []string{"peers", "--json", "--api", p.api}
	if p.cred != "" {
		args = append(args, "--credential", p.cred)
	}
	out, errs, code := agora(p.t, args...)
	if code != 0 {
		p.t.Fatalf("agora peers: exit %d: %s", code, errs)
	}
	var ps []peerJSON
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		p.t.Fatalf("agora peers --json: %v: %s", err, out)
	}
	m := map[string]peerJSON{}
	for _, x := range ps {
		m[x.PeerID] = x
	}
	return m
}

// apiPoll is how often the real-binary tests poll: each poll is an API
// call or a file read against running nodes.
const apiPoll = 50 * time.Millisecond

func tcpAddr(t testing.TB, id idJSON) string {
	for _, a := range id.Addrs {
		if strings.Contains(a, "/tcp/") {
			return a
		}
	}
	t.Fatalf("no tcp address in %v", id.Addrs)
	return ""
}

func writeFile(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestThreeNodesChain is the foundation acceptance test: B bootstraps from
// A, C only from B; each lists the other two with their declared
// resources; a kill -9 is noticed within 4 intervals; a restart keeps the
// peer ID.
func TestThreeNodesChain(t *testing.T) {
	resA := writeFile(t, "a.yaml", "cpu: 4\nmemory: 8GiB\ngpus: []\n")
	resB := writeFile(t, "b.yaml", "cpu: 16\nmemory: 64GiB\ngpus:\n  - {model: A100, memory: 40GiB}\n  - {model: A100, memory: 40GiB}\n")
	resC := writeFile(t, "c.yaml", "cpu: 8\nmemory: 16GiB\ngpus: []\n")
	a := startNode(t, t.TempDir(), "--resources", resA, "--site", "a")
	b := startNode(t, t.TempDir(), "--resources", resB, "--site", "b", "--bootstrap", tcpAddr(t, a.id()))
	cData := t.TempDir()
	c := startNode(t, cData, "--resources", resC, "--site", "c", "--bootstrap", tcpAddr(t, b.id()))
	cListen := strings.Split(tcpAddr(t, c.id()), "/p2p/")[0] // restarted on its own address
	nodes := []*proc{a, b, c}
	ids := []string{a.id().PeerID, b.id().PeerID, c.id().PeerID}
	cpus := []float64{4, 16, 8}

	start := time.Now()
	waitfor.Every(t, 10*time.Second, apiPoll, "every node to list the other two", func() bool {
		for i, n := range nodes {
			ps := n.peers()
			for j := range nodes {
				if i != j {
					if _, ok := ps[ids[j]]; !ok {
						return false
					}
				}
			}
		}
		return true
	})
	t.Logf("converged in %v", time.Since(start))
	for i, n := range nodes {
		ps := n.peers()
		for j := range nodes {
			if i == j {
				continue
			}
			p := ps[ids[j]]
			if p.Capacity.CPU != cpus[j] {
				t.Errorf("node %d sees node %d with %v cores, want %v", i, j, p.Capacity.CPU, cpus[j])
			}
			wantGPU := 0
			if j == 1 {
				wantGPU = 2
			}
			if len(p.Capacity.GPUs) != wantGPU {
				t.Errorf("node %d sees node %d with %d GPUs, want %d", i, j, len(p.Capacity.GPUs), wantGPU)
			}
			if _, err := time.Parse(time.RFC3339, p.LastSeen); err != nil {
				t.Errorf("last_seen %q is not RFC 3339", p.LastSeen)
			}
		}
	}

	// kill -9 C: A and B drop it within 4 advert intervals (1.2 s).
	c.kill()
	killed := time.Now()
	waitfor.Every(t, 1200*time.Millisecond+300*time.Millisecond, apiPoll, "A and B to drop the killed node", func() bool {
		_, inA := a.peers()[ids[2]]
		_, inB := b.peers()[ids[2]]
		return !inA && !inB
	})
	t.Logf("killed node dropped after %v", time.Since(killed))

	// Restart with the same data dir: same peer ID, back in the views.
	c2, err := launchNode(t, cData, "--resources", resC, "--site", "c", "--listen", cListen, "--bootstrap", tcpAddr(t, b.id()))
	if errors.Is(err, errAddrInUse) {
		// another test took the port while C was down; the peer ID, not
		// the port, is what a restart must keep
		t.Logf("%s taken while the node was down; restarting on another port", cListen)
		c2, err = launchNode(t, cData, "--resources", resC, "--site", "c", "--bootstrap", tcpAddr(t, b.id()))
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.id().PeerID; got != ids[2] {
		t.Fatalf("restarted node has peer ID %s, want %s", got, ids[2])
	}
	waitfor.Every(t, 10*time.Second, apiPoll, "restarted node to reappear", func() bool {
		_, inA := a.peers()[ids[2]]
		_, inB := b.peers()[ids[2]]
		return inA && inB
	})
}

// TestBadInput: each kind of bad input gives one clear line and exit 2.
func TestBadInput(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "cpu: lots\n")
	held := t.TempDir()
	first := startNode(t, held)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"malformed resources", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--resources", bad}, "cpu"},
		{"missing resources", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--resources", "/nonexistent/r.yaml"}, "/nonexistent/r.yaml"},
		{"bad listen multiaddr", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--listen", "/ip4/999.1.1.1/tcp/1"}, "--listen"},
		{"bad bootstrap", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--bootstrap", "/ip4/127.0.0.1/tcp/1"}, "--bootstrap"},
		{"api in use", []string{"node", "--data", t.TempDir(), "--api", first.api, "--listen", "/ip4/127.0.0.1/tcp/0"}, "API address"},
		{"data dir locked", []string{"node", "--data", held, "--api", "127.0.0.1:0", "--listen", "/ip4/127.0.0.1/tcp/0"}, "in use by another"},
		{"relay delay too long", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--advert-relay-delay", "1s"}, "--advert-relay-delay"},
		{"negative relay delay", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--advert-relay-delay", "-1ms"}, "--advert-relay-delay"},
		{"cgroup parent not a cgroup", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--listen", "/ip4/127.0.0.1/tcp/0", "--cgroup-parent", t.TempDir()}, "--cgroup-parent"},
		{"bad image cache limit", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--image-cache-limit", "lots"}, "--image-cache-limit"},
		{"negative image cache limit", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--image-cache-limit", "-1GiB"}, "--image-cache-limit"},
		{"negative job retention", []string{"node", "--data", t.TempDir(), "--api", "127.0.0.1:0", "--job-retention", "-1h"}, "--job-retention"},
		{"unknown flag", []string{"node", "--frobnicate"}, "frobnicate"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := agora(t, c.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; stderr:\n%s", code, errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Fatalf("stderr %q does not mention %q", errs, c.want)
			}
		})
	}
	// The running node is unharmed.
	if first.id().PeerID == "" {
		t.Fatal("first node stopped answering")
	}
}

// TestSIGTERMGraceful: SIGTERM stops the node cleanly with exit 0.
func TestSIGTERMGraceful(t *testing.T) {
	p := startNode(t, t.TempDir())
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node exited with %v; output:\n%s", err, p.log.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("node did not stop within 10s of SIGTERM")
	}
}

// TestSecondInterruptKillsTasks: a second SIGTERM during a graceful stop
// kills the running tasks at once and exits with status 1.
func TestSecondInterruptKillsTasks(t *testing.T) {
	p := startNode(t, t.TempDir())
	pidFile := filepath.Join(sharedDir(t), "pid") // the task runs under a user ID of its own
	script := fmt.Sprintf(`trap '' TERM; echo $$ > %s.tmp; mv %[1]s.tmp %[1]s; while :; do sleep 0.1; done`, pidFile)
	spec := writeFile(t, "stubborn.json", fmt.Sprintf(`{"name": "stubborn", "tasks": [{"name": "t", "command": ["sh", "-c", %q]}]}`, script))
	if out, errs, code := agora(t, "submit", "--api", p.api, spec); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errs)
	}
	var pid int
	waitfor.Every(t, 10*time.Second, apiPoll, "the task to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		return err == nil
	})
	done := make(chan error, 1)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() { done <- p.cmd.Wait() }()
	waitfor.Every(t, 5*time.Second, apiPoll, "the graceful stop to begin", func() bool {
		return strings.Contains(p.log.String(), "shutting down")
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("node exited with %v, want status 1; output:\n%s", err, p.log.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("node still running 10s after the second SIGTERM; output:\n%s", p.log.String())
	}
	if !strings.Contains(p.log.String(), "killing the tasks") {
		t.Fatalf("no word of killing the tasks; output:\n%s", p.log.String())
	}
	if alive(pid) {
		t.Fatalf("task process %d survived the node", pid)
	}
}

// alive reports whether pid runs: not absent, and not a zombie (a task's
// process below the shell that records its exit is reparented when that
// shell dies, and a container's init may never reap it).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// TestOpenNodeStaysOnLoopback: a node without --trust refuses a listen
// address beyond loopback, naming --trust and --insecure; --init prints
// the peer ID a certificate is made for; --trust needs --cert.
func TestOpenNodeStaysOnLoopback(t *testing.T) {
	data := t.TempDir()
	// Addresses the node refuses before it binds anything; the
	// unspecified ones are checked without a node (admission
	// TestCheckExposure).
	for _, listen := range []string{"/ip4/10.1.2.3/tcp/4001", "/dns4/example.com/tcp/4001"} {
		_, errs, code := agora(t, "node", "--data", data, "--api", "127.0.0.1:0", "--no-nvml", "--listen", listen)
		if code != 2 || !strings.Contains(errs, "--trust") || !strings.Contains(errs, "--insecure") {
			t.Errorf("--listen %s: exit %d, stderr %q; want 2 naming --trust and --insecure", listen, code, errs)
		}
	}
	out, errs, code := agora(t, "node", "--data", data, "--init")
	if code != 0 {
		t.Fatalf("--init: %d %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if !strings.HasPrefix(id, "12D3KooW") {
		t.Fatalf("--init printed %q", out)
	}
	again, _, _ := agora(t, "node", "--data", data, "--init")
	if strings.TrimSpace(again) != id {
		t.Fatal("--init changed the identity")
	}
	ca := filepath.Join(t.TempDir(), "ca")
	if _, errs, code := agora(t, "authority", "init", ca); code != 0 {
		t.Fatal(errs)
	}
	_, errs, code = agora(t, "node", "--data", data, "--api", "127.0.0.1:0", "--no-nvml", "--listen", "/ip4/127.0.0.1/tcp/0", "--trust", filepath.Join(ca, "authority.pub"))
	if code != 2 || !strings.Contains(errs, "--cert") {
		t.Fatalf("--trust without --cert: exit %d, %q", code, errs)
	}
	cert := filepath.Join(t.TempDir(), "other.crt")
	other := newPeerID(t)
	if _, errs, code := agora(t, "admit", "--authority", ca, other, "--out", cert); code != 0 {
		t.Fatal(errs)
	}
	_, errs, code = agora(t, "node", "--data", data, "--api", "127.0.0.1:0", "--no-nvml", "--listen", "/ip4/127.0.0.1/tcp/0", "--trust", filepath.Join(ca, "authority.pub"), "--cert", cert)
	if code != 2 || !strings.Contains(errs, "another peer") {
		t.Fatalf("a certificate of another peer: exit %d, %q", code, errs)
	}
}

// TestVersion (issue 41, done-when 6): the binary names the commit it
// was built from, in `agora version`, `agora id --json` and /metrics.
func TestVersion(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): no commit to compare with", err)
	}
	commit := strings.TrimSpace(string(head))
	out, errs, code := agora(t, "version")
	if code != 0 || !strings.Contains(out, "commit "+commit) || !strings.Contains(out, "go1.") {
		t.Fatalf("agora version: exit %d, %q %q; want the commit %s", code, out, errs, commit)
	}
	p := startNode(t, t.TempDir())
	out, _, _ = agora(t, "id", "--json", "--api", p.api)
	var id struct {
		Build struct{ Commit, Version string }
	}
	if err := json.Unmarshal([]byte(out), &id); err != nil || id.Build.Commit != commit {
		t.Fatalf("agora id --json names build %+v, want commit %s: %v\n%s", id.Build, commit, err, out)
	}
	resp, err := http.Get("http://" + p.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`(?m)^agora_build_info\{.*commit="` + commit + `".*\} 1$`).Match(b) {
		t.Fatalf("/metrics has no agora_build_info naming commit %s", commit)
	}
}
