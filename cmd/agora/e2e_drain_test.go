package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestE2EDrainUndrain (issue 47, done-when 6): an operator's drain hands
// a running task back — its status says it was preempted — is shown by
// the node and by its peers, outlives a restart, and ends with undrain,
// after which the node runs the task again.
func TestE2EDrainUndrain(t *testing.T) {
	a := startNode(t, t.TempDir(), "--label", "zone=a")
	bData := t.TempDir()
	bFlags := []string{"--label", "zone=b", "--bootstrap", tcpAddr(t, a.id())}
	b := startNode(t, bData, bFlags...)
	seeEachOther(t, a, b)
	bID := b.id().PeerID

	// Only B can hold the task: drained, nothing runs it.
	spec := writeFile(t, "pinned.yaml", "name: pinned\ntasks:\n  - name: t\n    command: [sleep, '300']\n    resources: {cpu: 1, labels: {zone: b}}\n")
	out, errs, code := agora(t, "submit", "--api", a.api, "--json", spec)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	id := jobID(out)
	onB := func(what string) {
		waitfor.Every(t, 20*time.Second, apiPoll, what, func() bool {
			tk := e2eStatus(t, a.api, id).Tasks[0]
			return tk.State == "running" && tk.Node == bID
		})
	}
	onB("the task to run on B")

	out, errs, code = agora(t, "drain", "--api", b.api, "--json")
	if code != 0 {
		t.Fatalf("drain: exit %d: %s", code, errs)
	}
	var dr struct{ State string }
	if err := json.Unmarshal([]byte(out), &dr); err != nil || dr.State != "drained" {
		t.Fatalf("drain --json: %q (%v)", out, err)
	}
	waitfor.Every(t, 20*time.Second, apiPoll, "the task to be handed back, preempted", func() bool {
		tk := e2eStatus(t, a.api, id).Tasks[0]
		return tk.State == "pending" && tk.Preempted == 1
	})
	human, _, _ := agora(t, "status", "--api", a.api, id)
	if !strings.Contains(human, "(1 preempted)") || !strings.Contains(human, "node draining") {
		t.Fatalf("agora status does not say the task was preempted by the drain:\n%s", human)
	}
	tk := e2eStatus(t, a.api, id).Tasks[0]
	if h := tk.History; len(h) != 1 || h[0].State != "preempted" || h[0].Node != bID {
		t.Errorf("history %+v, want one attempt preempted on B", h)
	}

	drainedSeen := func(want bool) {
		t.Helper()
		waitfor.Every(t, 10*time.Second, apiPoll, "B's drained state in its id and in A's peers", func() bool {
			var id struct{ Drained bool }
			out, _, code := agora(t, "id", "--json", "--api", b.api)
			if code != 0 || json.Unmarshal([]byte(out), &id) != nil || id.Drained != want {
				return false
			}
			var ps []struct {
				PeerID  string `json:"peer_id"`
				Drained bool   `json:"drained"`
			}
			out, _, code = agora(t, "peers", "--json", "--api", a.api)
			if code != 0 || json.Unmarshal([]byte(out), &ps) != nil {
				return false
			}
			for _, p := range ps {
				if p.PeerID == bID {
					return p.Drained == want
				}
			}
			return false
		})
	}
	drainedSeen(true)
	if out, _, _ := agora(t, "id", "--api", b.api); !strings.Contains(out, "drained") {
		t.Errorf("agora id does not say the node is drained:\n%s", out)
	}
	if out, _, _ := agora(t, "peers", "--api", a.api); !strings.Contains(out, "STATE") || !strings.Contains(out, "drained") {
		t.Errorf("agora peers does not show B drained:\n%s", out)
	}

	// A restart keeps the drain (a graceful stop's own drain is not kept:
	// TestSIGTERMGraceful's node and every restart test take work after).
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("B did not stop cleanly: %v\n%s", err, b.log.String())
	}
	b = startNode(t, bData, bFlags...)
	if b.id().PeerID != bID {
		t.Fatal("restarted B has another peer ID")
	}
	seeEachOther(t, a, b)
	drainedSeen(true)
	if tk := e2eStatus(t, a.api, id).Tasks[0]; tk.State == "running" {
		t.Fatalf("the task runs on drained B after its restart: %+v", tk)
	}

	out, errs, code = agora(t, "undrain", "--api", b.api)
	if code != 0 || !strings.Contains(out, "undrained") {
		t.Fatalf("undrain: exit %d: %s%s", code, out, errs)
	}
	drainedSeen(false)
	onB("the task to run on B again once undrained")
	if tk := e2eStatus(t, a.api, id).Tasks[0]; tk.Attempts != 2 || tk.Preempted != 1 {
		t.Errorf("after undrain: %d attempts, %d preempted; want 2 and 1", tk.Attempts, tk.Preempted)
	}
	out, errs, code = agora(t, "cancel", "--api", a.api, "--json", id)
	var cr struct{ ID, State string }
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil || cr.ID != id || cr.State != "cancelled" {
		t.Fatalf("cancel --json: exit %d: %s %s", code, out, errs)
	}
}
