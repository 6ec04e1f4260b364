package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/netns"
)

// nsNode is a real node process in a network namespace of the test's.
type nsNode struct {
	t      *testing.T
	ns, ip string
	cmd    *exec.Cmd
	log    *syncBuffer
	api    string
}

// startNS starts `agora node` in namespace ns, listening on ip (TCP only:
// the NAT drops unsolicited UDP as it does TCP, and one transport keeps
// the relayed/direct report simple) with its API on the namespace's own
// loopback.
func startNS(t *testing.T, n *netns.Net, ns, ip string, args ...string) *nsNode {
	t.Helper()
	data := t.TempDir()
	full := append([]string{"node", "--data", data, "--api", "127.0.0.1:0", "--no-nvml", "--advert-interval", "300ms",
		"--allow-unenforced-limits", "--insecure", "--listen", "/ip4/" + ip + "/tcp/4001"}, args...)
	cmd := n.Command(ns, agoraBin, full...)
	if lv := os.Getenv("AGORA_NAT_DEBUG"); lv != "" {
		cmd.Env = append(os.Environ(), "GOLOG_LOG_LEVEL="+lv)
	}
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	nd := &nsNode{t: t, ns: ns, ip: ip, cmd: cmd, log: &buf}
	t.Cleanup(nd.kill)
	waitFor(t, 15*time.Second, "api.addr in "+ns, func() bool {
		b, err := os.ReadFile(filepath.Join(data, "api.addr"))
		nd.api = strings.TrimSpace(string(b))
		return err == nil && nd.api != ""
	})
	return nd
}

func (nd *nsNode) kill() {
	if nd.cmd.ProcessState == nil && nd.cmd.Process != nil {
		_ = nd.cmd.Process.Signal(syscall.SIGKILL)
		_ = nd.cmd.Wait()
	}
}

// agora runs a client command against the node, from inside its
// namespace (its API listens on that namespace's loopback).
func (nd *nsNode) agora(args ...string) (string, string, int) {
	nd.t.Helper()
	args = append(args[:1:1], append([]string{"--api", nd.api}, args[1:]...)...)
	cmd := exec.Command("ip", append([]string{"netns", "exec", nd.ns, agoraBin}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		nd.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func (nd *nsNode) id() idJSON {
	nd.t.Helper()
	out, errs, code := nd.agora("id", "--json")
	if code != 0 {
		nd.t.Fatalf("agora id in %s: exit %d: %s", nd.ns, code, errs)
	}
	var r idJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		nd.t.Fatalf("agora id --json: %v: %s", err, out)
	}
	return r
}

// TestEdgeBehindNAT (issue 25, done-when 1, first part): two edge nodes
// behind two NATs that drop unsolicited inbound connections, and a public
// node A offering relay service that both bootstrap to. E1 lists E2; a
// task submitted on E1 and pinned to E2's label runs on E2, and E1 reads
// its logs — through E2's relay address, as nothing can dial E2 directly.
func TestEdgeBehindNAT(t *testing.T) {
	n := netns.New(t)
	s := n.Sites(2)
	a := startNS(t, n, s.Public, s.PublicAddr, "--relay-service", "--label", "role=a")
	aID := a.id()
	boot := fmt.Sprintf("/ip4/%s/tcp/4001/p2p/%s", s.PublicAddr, aID.PeerID)
	e1 := startNS(t, n, s.Edges[0], s.EdgeAddrs[0], "--nat-traversal", "--bootstrap", boot, "--label", "role=e1")
	e2 := startNS(t, n, s.Edges[1], s.EdgeAddrs[1], "--nat-traversal", "--bootstrap", boot, "--label", "role=e2")
	dump := func() {
		for _, nd := range []*nsNode{a, e1, e2} {
			t.Logf("--- %s:\n%s", nd.ns, tail(nd.log.String(), 40))
		}
	}
	e2ID := e2.id().PeerID
	start := time.Now()
	listed := false
	for time.Since(start) < 20*time.Second && !listed {
		out, _, code := e1.agora("peers")
		listed = code == 0 && strings.Contains(out, e2ID)
		time.Sleep(200 * time.Millisecond)
	}
	if !listed {
		dump()
		t.Fatalf("E1 did not list E2 (%s) within 20 s", e2ID)
	}
	t.Logf("E1 lists E2 after %v", time.Since(start).Round(time.Millisecond))
	relayed := false
	for time.Since(start) < 30*time.Second && !relayed {
		relayed = strings.Contains(strings.Join(e2.id().Addrs, " "), "/p2p-circuit")
		time.Sleep(200 * time.Millisecond)
	}
	if !relayed {
		dump()
		t.Fatalf("E2 advertises no relay address 30 s after it started: %v", e2.id().Addrs)
	}
	t.Logf("E2 learnt by AutoNAT it is not reachable and holds a slot on A's relay %v after it started", time.Since(start).Round(time.Millisecond))
	spec := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(spec, []byte("name: behind-nat\ntasks:\n  - name: hello\n    command: \"echo hello-behind-nat\"\n    resources: {labels: {role: e2}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// the file must be readable from inside the namespace: it is (same
	// file system), and the CLI reads it there
	out, errs, code := e1.agora("submit", "--json", spec)
	if code != 0 {
		dump()
		t.Fatalf("submit on E1: exit %d: %s %s", code, out, errs)
	}
	id := jobID(out)
	var state, ranOn string
	waitFor(t, 60*time.Second, "the pinned task to finish", func() bool {
		out, _, code := e1.agora("status", "--json", id)
		if code != 0 {
			return false
		}
		var st jobStatus
		if json.Unmarshal([]byte(out), &st) != nil || len(st.Tasks) == 0 {
			return false
		}
		state, ranOn = st.Tasks[0].State, st.Tasks[0].Node
		if state == "failed" {
			dump()
			t.Fatalf("the pinned task failed: %s", out)
		}
		return state == "succeeded"
	})
	if ranOn != e2ID {
		t.Fatalf("the task pinned to E2 ran on %s, want %s", ranOn, e2ID)
	}
	logs, errs, code := e1.agora("logs", id)
	if code != 0 || !strings.Contains(logs, "hello-behind-nat") {
		dump()
		t.Fatalf("E1 reading the task's logs: exit %d: %q %s", code, logs, errs)
	}
	t.Logf("task ran on E2; E1 read %q", strings.TrimSpace(logs))
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
