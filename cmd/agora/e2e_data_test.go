package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// startLabelled starts one node per label value (role=VALUE), each
// bootstrapping from the first, and waits until all list each other.
func startLabelled(t *testing.T, roles ...string) *e2eCluster {
	t.Helper()
	c := &e2eCluster{}
	for i, role := range roles {
		args := []string{"--label", "role=" + role}
		if i > 0 {
			args = append(args, "--bootstrap", tcpAddr(t, c.nodes[0].id()))
		}
		p := startNode(t, t.TempDir(), args...)
		c.nodes = append(c.nodes, p)
		c.ids = append(c.ids, p.id().PeerID)
	}
	c.converge(t, 20*time.Second)
	return c
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hashesIn finds `sha256sum` lines in a task's log: file → hash.
func hashesIn(log string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([0-9a-f]{64})\s+\*?(\S+)$`).FindAllStringSubmatch(log, -1) {
		out[m[2]] = m[1]
	}
	return out
}

// TestE2EDataPipeline (issue 23, done-when 1 and 2): prep on node A
// writes 10 MiB to out.bin; train on node B takes it and a local
// params.json and hashes both: byte-identical. agora get from node C
// returns prep's outputs byte-identical, and still does after A is killed
// with kill -9, when the later task late (on C) also gets them.
func TestE2EDataPipeline(t *testing.T) {
	c := startLabelled(t, "a", "b", "c")
	c.dumpLogs(t)
	a, b, cc := c.nodes[0], c.nodes[1], c.nodes[2]
	dir := t.TempDir()
	params := filepath.Join(dir, "params.json")
	if err := os.WriteFile(params, []byte(`{"lr": 0.001, "epochs": 3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(dir, "gate")
	specText := fmt.Sprintf(`
name: pipeline
tasks:
  - name: prep
    command: "head -c 10485760 /dev/urandom > out.bin && sha256sum out.bin"
    outputs: [out.bin]
    resources: {labels: {role: a}}
  - name: train
    after: [prep]
    inputs:
      - {from: prep, path: out.bin}
      - {local: ./params.json, path: params.json}
    command: "sha256sum out.bin params.json"
    resources: {labels: {role: b}}
  - name: late
    after: [train]
    inputs:
      - {from: prep, path: data/in.bin}
    command: "while [ ! -e %s ]; do sleep 0.1; done; sha256sum data/in.bin"
    resources: {labels: {role: c}}
`, gate)
	file := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(file, []byte(specText), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := agora(t, "submit", "--api", b.api, "--json", file)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := jobID(out)
	waitfor.Every(t, 60*time.Second, apiPoll, "train to succeed", func() bool {
		st := e2eStatus(t, b.api, id)
		for _, tk := range st.Tasks {
			if tk.Name == "train" {
				return tk.State == "succeeded"
			}
		}
		return false
	})
	logOf := func(api, task string) string {
		out, errs, code := agora(t, "logs", "--api", api, "--task", task, id)
		if code != 0 {
			t.Fatalf("logs %s: %s", task, errs)
		}
		return out
	}
	prep, train := hashesIn(logOf(cc.api, "prep")), hashesIn(logOf(cc.api, "train"))
	t.Logf("prep wrote %v; train saw %v", prep, train)
	if prep["out.bin"] == "" || train["out.bin"] != prep["out.bin"] {
		t.Fatalf("train saw out.bin %q, prep wrote %q", train["out.bin"], prep["out.bin"])
	}
	if want := sha256File(t, params); train["params.json"] != want {
		t.Fatalf("train saw params.json %q, want %q", train["params.json"], want)
	}
	st := e2eStatus(t, b.api, id)
	for _, tk := range st.Tasks {
		want := map[string]string{"prep": c.ids[0], "train": c.ids[1]}[tk.Name]
		if want != "" && tk.Node != want {
			t.Fatalf("%s ran on %s, want %s", tk.Name, tk.Node, want)
		}
	}

	get := func(what string) {
		t.Helper()
		into := filepath.Join(t.TempDir(), "got")
		out, errs, code := agora(t, "get", "--api", cc.api, "--task", "prep", "--out", into, "--json", id)
		if code != 0 {
			t.Fatalf("agora get (%s): exit %d: %s %s", what, code, out, errs)
		}
		var got []struct {
			Task  string
			Bytes int64
			Dir   string
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].Task != "prep" || got[0].Dir != into || got[0].Bytes <= 0 {
			t.Fatalf("agora get --json (%s): %v %s", what, err, out)
		}
		if got := sha256File(t, filepath.Join(into, "out.bin")); got != prep["out.bin"] {
			t.Fatalf("agora get (%s): out.bin %s, want %s", what, got, prep["out.bin"])
		}
	}
	get("all nodes up")
	a.kill()
	get("prep's node killed")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitfor.Every(t, 60*time.Second, apiPoll, "the job to end", func() bool { return e2eStatus(t, b.api, id).State != "running" })
	if st := e2eStatus(t, b.api, id); st.State != "succeeded" {
		t.Fatalf("job %s: %s", st.State, st.Reason)
	}
	if late := hashesIn(logOf(b.api, "late")); late["data/in.bin"] != prep["out.bin"] {
		t.Fatalf("late saw %q, prep wrote %q", late["data/in.bin"], prep["out.bin"])
	}
}
