package main

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// submitMany runs `agora run` n times for user (8 at a time) against
// the nodes in turn, and returns the job IDs.
func submitMany(t *testing.T, nodes []*proc, cred string, n int, cmd ...string) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	var mu sync.Mutex
	var failed []string
	for i := range n {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out, errs, code := agora(t, append([]string{"run", "--api", nodes[i%len(nodes)].api, "--credential", cred, "--cpu", "1", "--retries", "0", "--"}, cmd...)...)
			mu.Lock()
			defer mu.Unlock()
			if code != 0 {
				failed = append(failed, errs)
				return
			}
			ids[i] = strings.TrimSpace(out)
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d submissions failed: %s", len(failed), failed[0])
	}
	return ids
}

// TestE2EFairShare (issue 46): three nodes with an authority, as a user
// runs them, 6 cores in all. alice floods the network with 60 one-core
// jobs of 5 s; then bob submits 10. Once alice's tasks have run, her
// decayed usage dominates and the contractors start bob's tasks before
// alice's still queued ones (first come would start them after all 40
// or so); `agora jobs --all` shows both users' factors meanwhile.
func TestE2EFairShare(t *testing.T) {
	cred, nodes := usersNetwork(t)
	a, b, c := nodes[0], nodes[1], nodes[2]

	aliceJobs := submitMany(t, nodes, cred["alice"], 60, "sleep", "5")
	// alice's first tasks end: her usage is charged.
	waitfor.Every(t, 30*time.Second, apiPoll, "alice's first tasks to finish", func() bool {
		return len(acctRows(t, a, cred["carol"], "--user", "alice", "--state", "succeeded")) >= 3
	})
	bobJobs := submitMany(t, nodes, cred["bob"], 10, "sleep", "5")
	bobIn := time.Now()

	// The queue, as any node lists it, shows each waiting job's factors:
	// alice's below bob's.
	out, errs, code := agora(t, "jobs", "--all", "--api", b.api, "--credential", cred["carol"], "--json")
	if code != 0 {
		t.Fatalf("jobs --all: %s", errs)
	}
	var rows []api.JobRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	factor := map[string]float64{}
	for _, r := range rows {
		if r.State != "succeeded" && r.Factors != nil {
			factor[r.Owner] = r.Factors.FairShare
		}
	}
	t.Logf("factors seen by the managers: %v", factor)
	if _, ok := factor["alice"]; !ok || factor["bob"] <= factor["alice"] {
		t.Fatalf("jobs --all factors %v: want alice's and bob's, alice's lower", factor)
	}
	table, _, _ := agora(t, "jobs", "--all", "--api", b.api, "--credential", cred["carol"], "--state", "pending,running")
	if !strings.Contains(table, "FAIRSHARE") {
		t.Fatalf("jobs --all table has no FAIRSHARE column:\n%s", table)
	}

	all := append(append([]string{}, aliceJobs...), bobJobs...)
	waitfor.Every(t, 3*time.Minute, time.Second, "every job to finish", func() bool {
		return len(acctRows(t, c, cred["carol"], "--state", "succeeded")) >= len(all)
	})
	start := map[string]time.Time{}
	for _, r := range acctRows(t, c, cred["carol"], "--state", "succeeded") {
		start[r.Job] = r.Start
	}
	var lastBob time.Time
	var bobWait time.Duration
	for _, j := range bobJobs {
		if start[j].After(lastBob) {
			lastBob = start[j]
		}
		bobWait += start[j].Sub(bobIn)
	}
	var queued []time.Time // alice's jobs still queued when bob's were in
	for _, j := range aliceJobs {
		if start[j].After(bobIn) {
			queued = append(queued, start[j])
		}
	}
	sort.Slice(queued, func(i, j int) bool { return queued[i].Before(queued[j]) })
	overtook := 0
	for _, s := range queued {
		if s.Before(lastBob) {
			overtook++
		}
	}
	t.Logf("alice's jobs queued when bob's came: %d; of them started before bob's last: %d; bob's mean start after submitting %v",
		len(queued), overtook, bobWait/time.Duration(len(bobJobs)))
	if len(queued) < 20 {
		t.Fatalf("only %d of alice's jobs were still queued: the test shows nothing", len(queued))
	}
	// First come would start all of them before bob's last; with fair
	// share, at most about a wave of the 6 cores (the tasks that started
	// while bob's were still being submitted).
	if overtook > 12 {
		t.Fatalf("%d of alice's %d queued jobs started before bob's last: fair share did not put bob first", overtook, len(queued))
	}
}
