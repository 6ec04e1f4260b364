package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignedDataJob (issues 21 and 23): in a network with an authority,
// alice's signed job passes a task's outputs and a local file to a later
// task on another node — the executors take the inputs only as the
// signed job places them — and alice, not bob, gets the outputs back.
func TestSignedDataJob(t *testing.T) {
	ca := newCA(t)
	a := trustedNode(t, ca, "--label", "role=a")
	b := trustedNode(t, ca, "--label", "role=b", "--bootstrap", tcpAddr(t, a.id()))
	cred := addUsers(t, ca, "alice", "bob")
	seeEachOther(t, a, b)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "params.json"), []byte(`{"signed": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `name: signed-data
tasks:
  - name: prep
    command: "echo made-by-prep > out.txt"
    outputs: [out.txt]
    resources: {labels: {role: a}}
  - name: use
    after: [prep]
    inputs:
      - {from: prep, path: in/out.txt}
      - {local: ./params.json, path: params.json}
    command: "cat in/out.txt params.json"
    resources: {labels: {role: b}}
`
	file := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := agora(t, "submit", "--api", a.api, "--credential", cred["alice"], "--wait", "--json", file)
	if code != 0 {
		t.Fatalf("alice's signed data job: exit %d: %s %s", code, out, errs)
	}
	id := jobID(out)
	logs, errs, code := agora(t, "logs", "--api", b.api, "--credential", cred["alice"], "--task", "use", id)
	if code != 0 || !strings.Contains(logs, "made-by-prep") || !strings.Contains(logs, `{"signed": true}`) {
		t.Fatalf("use's log: exit %d %q %s", code, logs, errs)
	}
	into := filepath.Join(t.TempDir(), "got")
	if _, errs, code := agora(t, "get", "--api", b.api, "--credential", cred["alice"], "--task", "prep", "--out", into, id); code != 0 {
		t.Fatalf("alice's agora get: exit %d: %s", code, errs)
	}
	if got, _ := os.ReadFile(filepath.Join(into, "out.txt")); string(got) != "made-by-prep\n" {
		t.Fatalf("alice got %q", got)
	}
	if _, errs, code := agora(t, "get", "--api", b.api, "--credential", cred["bob"], "--task", "prep", "--out", t.TempDir(), id); code == 0 {
		t.Fatal("bob got alice's outputs")
	} else if !strings.Contains(errs, "user bob may not read the logs of a job of alice") {
		t.Fatalf("bob's refusal does not say why: %s", errs)
	}
}
