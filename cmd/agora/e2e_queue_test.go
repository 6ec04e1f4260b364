package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestClusterQueue (issue 26, done-when 1): on three nodes, `agora jobs
// --all` from any node lists the same set of jobs — owner, state, node —
// including those managed elsewhere; --state, --node and --user filter
// it, --format picks columns, and the JSON rows are what
// docs/operations.md documents.
func TestClusterQueue(t *testing.T) {
	nodes, ids := startThree(t, "cpu: 2\nmemory: 4GiB\ngpus: []\n")
	a, b, c := nodes[0], nodes[1], nodes[2]
	// One finished job managed by each node, pinned to the next node, and
	// one job on A that keeps running.
	want := map[string]string{} // job -> the node it ran on
	for i, n := range nodes {
		next := "abc"[(i+1)%3 : (i+1)%3+1]
		spec := writeFile(t, fmt.Sprintf("j%d.yaml", i), fmt.Sprintf("name: q%d\ntasks:\n  - name: t\n    command: \"true\"\n    resources: {cpu: 1, labels: {name: %s}}\n", i, next))
		out, errs, code := agora(t, "submit", "--api", n.api, "--wait", "--json", spec)
		if code != 0 {
			t.Fatalf("submit on node %d: %d %s %s", i, code, out, errs)
		}
		want[jobID(out)] = ids[(i+1)%3]
	}
	out, errs, code := agora(t, "run", "--api", a.api, "--json", "--", "sleep", "60")
	if code != 0 {
		t.Fatalf("run: %s %s", out, errs)
	}
	long := jobID(out)
	var longNode string
	waitfor.Every(t, 10*time.Second, apiPoll, "the long job to run", func() bool {
		st := e2eStatus(t, a.api, long)
		if st.State == "running" && len(st.Tasks) == 1 {
			longNode = st.Tasks[0].Node
		}
		return longNode != ""
	})
	want[long] = longNode
	rowsOf := func(n *proc, args ...string) []jobRow {
		t.Helper()
		out, errs, code := agora(t, append([]string{"jobs", "--api", n.api, "--all", "--json"}, args...)...)
		if code != 0 || errs != "" {
			t.Fatalf("jobs --all %v: exit %d: %s", args, code, errs)
		}
		var rows []jobRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("jobs --all --json: %v\n%s", err, out)
		}
		return rows
	}
	var first []jobRow
	for i, n := range nodes {
		rows := rowsOf(n)
		if len(rows) != len(want) {
			t.Fatalf("node %d lists %d jobs, want %d: %+v", i, len(rows), len(want), rows)
		}
		for _, r := range rows {
			if node, ok := want[r.ID]; !ok || !slices.Contains(r.Nodes, node) {
				t.Fatalf("node %d lists %s on %v, want it on %s", i, r.ID, r.Nodes, node)
			}
		}
		if i == 0 {
			first = rows
		} else if !slices.EqualFunc(rows, first, func(x, y jobRow) bool {
			return x.ID == y.ID && x.State == y.State && x.Owner == y.Owner && slices.Equal(x.Nodes, y.Nodes) && x.Manager == y.Manager
		}) {
			t.Fatalf("node %d lists\n%+v\nnode 0 lists\n%+v", i, rows, first)
		}
	}
	// Filters.
	if rows := rowsOf(b, "--state", "running"); len(rows) != 1 || rows[0].ID != long {
		t.Fatalf("--state running: %+v, want the long job alone", rows)
	}
	if rows := rowsOf(c, "--state", "succeeded"); len(rows) != 3 {
		t.Fatalf("--state succeeded: %d rows, want 3", len(rows))
	}
	onB := 0
	for _, n := range want {
		if n == ids[1] {
			onB++
		}
	}
	if rows := rowsOf(a, "--node", ids[1][len(ids[1])-6:]); len(rows) != onB {
		t.Fatalf("--node B: %d rows, want %d", len(rows), onB)
	}
	if rows := rowsOf(a, "--user", "nobody"); len(rows) != 0 {
		t.Fatalf("--user nobody: %+v, want none (an open network's jobs have no owner)", rows)
	}
	if _, errs, code := agora(t, "jobs", "--api", a.api, "--all", "--state", "stuck"); code != exitBadUsage || !strings.Contains(errs, "unknown state") {
		t.Fatalf("--state stuck: exit %d: %s", code, errs)
	}
	// The table, and a squeue-style format.
	out, _, _ = agora(t, "jobs", "--api", c.api, "--all")
	if !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "OWNER") || !strings.Contains(out, " ago") || strings.Count(out, "\n") != len(want)+1 {
		t.Fatalf("jobs --all table:\n%s", out)
	}
	out, _, _ = agora(t, "jobs", "--api", c.api, "--all", "--format", "%i %t")
	if !strings.HasPrefix(out, "ID") || !strings.Contains(out, long+"  R") {
		t.Fatalf("jobs --all --format '%%i %%t':\n%s", out)
	}
	t.Logf("jobs --all from C:\n%s", out)
}

// startThree starts three nodes on loopback with the resources res,
// labelled name=a, b and c, b and c bootstrapped to a, and waits until
// each lists the other two.
func startThree(t *testing.T, res string) ([]*proc, []string) {
	return startThreeBy(t, res, func(args ...string) *proc { return startNode(t, t.TempDir(), args...) }, 15*time.Second)
}

// startThreeBy is startThree with the nodes started by start, waiting
// up to mesh for them to list each other.
func startThreeBy(t *testing.T, res string, start func(args ...string) *proc, mesh time.Duration) ([]*proc, []string) {
	f := writeFile(t, "r.yaml", res)
	a := start("--resources", f, "--label", "name=a")
	b := start("--resources", f, "--label", "name=b", "--bootstrap", tcpAddr(t, a.id()))
	c := start("--resources", f, "--label", "name=c", "--bootstrap", tcpAddr(t, a.id()))
	nodes := []*proc{a, b, c}
	return nodes, waitMesh(t, nodes, mesh)
}

// waitMesh waits until each node lists every other, and returns their
// peer IDs.
func waitMesh(t testing.TB, nodes []*proc, d time.Duration) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.id().PeerID
	}
	waitfor.Every(t, d, apiPoll, "every node to list every other", func() bool {
		for i, n := range nodes {
			ps := n.peers()
			for j := range nodes {
				if _, ok := ps[ids[j]]; i != j && !ok {
					return false
				}
			}
		}
		return true
	})
	return ids
}
