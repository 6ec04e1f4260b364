package testnet

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// scrape reads a node's /metrics into sample → value, the sample written
// as in the text format: name, or name{labels}.
func scrape(t *testing.T, nd *Node) map[string]float64 {
	t.Helper()
	code, b, err := nd.API("GET", "/metrics", nil)
	if err != nil || code != 200 {
		t.Fatalf("node %d /metrics: %d, %v", nd.Index, code, err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("node %d /metrics: bad line %q", nd.Index, line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMarketMetrics: a node's /metrics counts the jobs it manages by
// state, the auction rounds it ran and the job-record copies its peers
// stored; the executors' series add up to the tasks that ran and how
// they ended.
func TestMarketMetrics(t *testing.T) {
	net := New(t, 3, Options{})
	net.WaitConverged(10 * time.Second)
	mgr := net.Node(0)
	ok, err := mgr.Submit(trivialJob("ok", 2))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := mgr.Submit(`{"name": "bad", "tasks": [{"name": "x", "command": ["sh", "-c", "exit 3"], "retries": 0, "resources": {"cpu": "100m"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := waitJob(t, mgr, ok, 20*time.Second); s.State != "succeeded" {
		t.Fatalf("job ok %s", s.State)
	}
	if s := waitJob(t, mgr, bad, 20*time.Second); s.State != "failed" {
		t.Fatalf("job bad %s", s.State)
	}
	var m map[string]float64
	sum := func(sample string) float64 {
		total := 0.0
		for _, nd := range net.Up() {
			total += scrape(t, nd)[sample]
		}
		return total
	}
	// Records replicate in the background, and an executor's task ends
	// are counted before its report: wait for both to settle.
	waitfor.Cond(t, 10*time.Second, "the replication and task counters", func() bool {
		m = scrape(t, mgr)
		return m["agora_job_record_copies_stored_total"] >= 4 && sum(`agora_tasks_ended_total{outcome="failed"}`) == 1
	})
	for sample, want := range map[string]float64{
		"agora_jobs_submitted_total":                        2,
		`agora_jobs{state="succeeded"}`:                     1,
		`agora_jobs{state="failed"}`:                        1,
		`agora_jobs{state="pending"}`:                       0,
		`agora_jobs{state="running"}`:                       0,
		`agora_jobs{state="cancelled"}`:                     0,
		"agora_job_record_copies_failed_total":              0,
		"agora_jobs_forgotten_total":                        0,
		`agora_finished_work_expired_total{kind="replica"}`: 0,
	} {
		if got, present := m[sample]; !present || got != want {
			t.Errorf("%s = %v (present %v), want %v", sample, got, present, want)
		}
	}
	if n := m["agora_auction_round_seconds_count"]; n < 3 {
		t.Errorf("%v auction rounds counted, want at least 3 (one per task)", n)
	}
	if _, present := m["agora_tasks_queued"]; !present || m["agora_free_cpu_cores"] <= 0 {
		t.Errorf("queue and free CPU gauges: queued present %v, free %v cores", present, m["agora_free_cpu_cores"])
	}
	if got := sum("agora_tasks_started_total"); got != 3 {
		t.Errorf("%v task attempts started over all nodes, want 3", got)
	}
	if got := sum(`agora_tasks_ended_total{outcome="succeeded"}`); got != 2 {
		t.Errorf("%v task attempts succeeded over all nodes, want 2", got)
	}
	for _, nd := range net.Up()[1:] {
		if got := scrape(t, nd)["agora_jobs_submitted_total"]; got != 0 {
			t.Errorf("node %d counts %v submitted jobs, want 0", nd.Index, got)
		}
	}
}
