package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestDiskLimit (issue 43, done-when 5): on a node run as users run it,
// alice's task that writes past its resources.disk fails with a reason
// naming the limit, and bob's submission to the same node, while it
// writes, is accepted and runs.
func TestDiskLimit(t *testing.T) {
	ca := newCA(t)
	n := trustedNode(t, ca, "--resources", writeFile(t, "r.yaml", "cpu: 2\nmemory: 4GiB\ngpus: []\n"))
	cred := addUsers(t, ca, "alice", "bob")
	spec := writeFile(t, "writer.yaml", `name: writer
tasks:
  - name: main
    retries: 0
    command: [sh, -c, "touch started; i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.02; done"]
    resources: {cpu: 100m, disk: 8MiB}
`)
	out, errs, code := agora(t, "submit", "--api", n.api, "--credential", cred["alice"], "--json", spec)
	if code != 0 {
		t.Fatalf("alice's submit: %s", errs)
	}
	job := jobID(out)
	waitfor.Every(t, 20*time.Second, apiPoll, "alice's task to run", func() bool {
		out, _, _ := agora(t, "status", "--api", n.api, "--credential", cred["alice"], "--json", job)
		return strings.Contains(out, `"running"`) || strings.Contains(out, `"failed"`)
	})
	out, errs, code = agora(t, "run", "--api", n.api, "--credential", cred["bob"], "--cpu", "100m", "--", "true")
	if code != 0 {
		t.Fatalf("bob's submission while alice's task writes: exit %d: %s", code, errs)
	}
	bobJob := strings.TrimSpace(out)
	var st api.JobStatus
	waitfor.Every(t, 60*time.Second, apiPoll, "alice's job to fail", func() bool {
		out, _, _ := agora(t, "status", "--api", n.api, "--credential", cred["alice"], "--json", job)
		return json.Unmarshal([]byte(out), &st) == nil && st.State == "failed"
	})
	if len(st.Tasks) != 1 || !strings.Contains(st.Tasks[0].Reason, "over its disk limit") || !strings.Contains(st.Tasks[0].Reason, "8.0 MiB") {
		t.Fatalf("alice's failed task: %+v; want a reason naming its disk limit", st.Tasks)
	}
	waitfor.Every(t, 30*time.Second, apiPoll, "bob's job to succeed", func() bool {
		out, _, _ := agora(t, "status", "--api", n.api, "--credential", cred["bob"], "--json", bobJob)
		return json.Unmarshal([]byte(out), &st) == nil && st.State == "succeeded"
	})
}
