package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// These tests run nodes as a production node runs: default flags (as
// root where the tests run as root: each task under a user ID of its
// own, from a block of IDs each node claims on the host), several nodes
// on one host.

// sharedDir is a directory every task may write, whatever its user ID
// (mode 0777 under the system's temporary directory, whose parents are
// traversable; not sticky, so that a retry under another ID may rewrite
// a file an earlier attempt made with umask 0), removed when the test
// ends.
func sharedDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "agora-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// markers counts the files in dir whose names start with prefix.
func markers(t *testing.T, dir, prefix string) map[string]int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range ents {
		if name, ok := strings.CutPrefix(e.Name(), prefix); ok {
			job, _, _ := strings.Cut(name, ".")
			n[job]++
		}
	}
	return n
}

// startDefault starts a node with the flags a user gives and no others:
// the default advert interval (2 s) and NVML discovery, unlike
// startNode's 300 ms adverts, which mark a peer gone after 0.9 s of
// silence: on a loaded CI host a node that stood still for 0.9 s was
// taken for gone by both its peers, which placed its tasks again, and 13
// of TestSharedHostDefaults' 60 jobs started twice. With the default a
// peer is gone after 6 s. --allow-unenforced-limits changes nothing
// where cgroups are writable (CI, as root).
func startDefault(t *testing.T, args ...string) *proc {
	t.Helper()
	p, err := launchNodeFlags(t, t.TempDir(), append([]string{"--allow-unenforced-limits"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSharedHostDefaults (issue 41, done-when 1, second part): three
// nodes with default flags on one host run 60 concurrent `sleep 1–5`
// jobs; every job succeeds, and each command started and ended exactly
// once, counted from the marker files the tasks write. Before each node
// claimed its own block of task IDs, the nodes handed out the same IDs
// and killed each other's tasks when theirs ended.
func TestSharedHostDefaults(t *testing.T) {
	nodes, _ := startThreeBy(t, "cpu: 24\nmemory: 16GiB\ngpus: []\n", func(args ...string) *proc { return startDefault(t, args...) }, 30*time.Second)
	marks := sharedDir(t)
	const jobs = 60
	ids := make([]string, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// mktemp: a start and an end each leave a file of their own,
			// so a second start cannot hide in an append.
			cmd := fmt.Sprintf(`mktemp %[1]s/start-%[2]d.XXXXXX >/dev/null && echo "$(id -u)" > %[1]s/uid-%[2]d.$$; sleep %[3]d; mktemp %[1]s/end-%[2]d.XXXXXX >/dev/null`, marks, i, 1+i%5)
			spec := writeFile(t, fmt.Sprintf("j%d.json", i), fmt.Sprintf(
				`{"name": "shared-%d", "tasks": [{"name": "t", "command": ["sh", "-c", %q], "resources": {"cpu": 1}}]}`, i, cmd))
			o, e, code := agora(t, "submit", "--api", nodes[i%3].api, "--json", spec)
			if code != 0 {
				t.Errorf("submit %d: exit %d: %s %s", i, code, o, e)
				return
			}
			ids[i] = jobID(o)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	final := map[string]string{}
	waitfor.Every(t, 120*time.Second, apiPoll, "60 jobs to end", func() bool {
		for i, id := range ids {
			if final[id] != "" {
				continue
			}
			st := e2eStatus(t, nodes[i%3].api, id)
			if st.State == "succeeded" || st.State == "failed" || st.State == "cancelled" {
				final[id] = st.State
				if st.State != "succeeded" {
					b, _ := json.Marshal(st)
					t.Errorf("job %d ended %s: %s", i, st.State, b)
				}
			}
		}
		return len(final) == jobs
	})
	starts, ends := markers(t, marks, "start-"), markers(t, marks, "end-")
	uids := map[string]bool{}
	for i := range jobs {
		k := fmt.Sprint(i)
		if starts[k] != 1 || ends[k] != 1 {
			t.Errorf("job %d: %d starts and %d ends, want 1 and 1", i, starts[k], ends[k])
		}
	}
	files, _ := filepath.Glob(filepath.Join(marks, "uid-*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		uids[strings.TrimSpace(string(b))] = true
	}
	if os.Geteuid() == 0 && (len(uids) < 3 || uids["0"]) {
		t.Errorf("a root node with default flags ran its tasks under %d user IDs %v; want IDs of their own, not root", len(uids), uids)
	}
	if t.Failed() {
		for i, n := range nodes {
			t.Logf("--- node %d output:\n%s", i, tail(n.log.String(), 80))
		}
	}
}

// TestCheckpointFailoverDefaults (issue 41, done-when 1, first part): with
// default flags (as root: the task under an ID of its own), a task that
// checkpoints runs, and after its executor is killed with SIGKILL resumes
// on another node from a checkpoint replicated to it.
func TestCheckpointFailoverDefaults(t *testing.T) {
	// A manages and has one CPU; the counter asks for two, so it runs on
	// B or C, and A, which stays up, moves it.
	a := startDefault(t, "--resources", writeFile(t, "a.yaml", "cpu: 1\nmemory: 4GiB\ngpus: []\n"))
	res := writeFile(t, "bc.yaml", "cpu: 2\nmemory: 4GiB\ngpus: []\n")
	b := startDefault(t, "--resources", res, "--bootstrap", tcpAddr(t, a.id()))
	c := startDefault(t, "--resources", res, "--bootstrap", tcpAddr(t, a.id()))
	cl := &e2eCluster{nodes: []*proc{a, b, c}, ids: []string{a.id().PeerID, b.id().PeerID, c.id().PeerID}}
	cl.converge(t, 15*time.Second)
	cl.dumpLogs(t)
	cmd, _ := json.Marshal(natCounter)
	spec := writeFile(t, "counter.yaml", fmt.Sprintf("name: counter\ntasks:\n  - name: count\n    command: %s\n    resources: {cpu: 2}\n    checkpoint: {interval: 2s}\n", cmd))
	out, errs, code := agora(t, "submit", "--api", a.api, "--json", spec)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := jobID(out)
	step := func() int {
		out, _, _ := agora(t, "logs", "--api", a.api, id)
		return lastMatch(`step (\d+)`, out)
	}
	var runner string
	waitfor.Every(t, 30*time.Second, apiPoll, "the counter to run past step 10", func() bool {
		st := e2eStatus(t, a.api, id)
		if st.State == "failed" {
			t.Fatalf("the counter failed: %+v", st)
		}
		if len(st.Tasks) == 1 && st.Tasks[0].State == "running" && step() >= 10 {
			runner = st.Tasks[0].Node
			return true
		}
		return false
	})
	victim := b
	if runner == cl.ids[2] {
		victim = c
	} else if runner != cl.ids[1] {
		t.Fatalf("the counter runs on %s, want B or C", runner)
	}
	atKill := step()
	victim.kill()
	waitfor.Every(t, 60*time.Second, apiPoll, "the counter to finish elsewhere", func() bool {
		st := e2eStatus(t, a.api, id)
		if st.State == "failed" {
			t.Fatalf("the counter failed: %+v", st)
		}
		return st.State == "succeeded"
	})
	st := e2eStatus(t, a.api, id)
	logs, _, _ := agora(t, "logs", "--api", a.api, id)
	from := lastMatch(`resumed from (\d+)`, logs)
	t.Logf("killed the executor at step %d; resumed on %s from %d", atKill, st.Tasks[0].Node, from)
	if st.Tasks[0].Node == runner {
		t.Fatalf("finished on the killed node %s", runner)
	}
	if from < 4 || from > atKill+1 {
		t.Fatalf("resumed from %d, want 4..%d (a checkpoint replicated from the killed node):\n%s", from, atKill+1, logs)
	}
}
