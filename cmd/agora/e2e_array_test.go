package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestE2EArray (issue 47, done-when 5): an array of 1,000 trivial
// elements with a throttle of 50 completes on two nodes with room for 80
// at once, each index run once and never more than 50 running, as the
// tasks' own start and end stamps show; agora status counts the replicas
// by state. An index run twice (an attempt lost with a node taken for
// gone is run again, at least once) fails the test, with its history.
func TestE2EArray(t *testing.T) {
	const elements, throttle = 1000, 50
	res := writeFile(t, "r.yaml", "cpu: 40\nmemory: 64GiB\ngpus: []\n")
	// The shipped advert interval (2 s), not the tests' 300 ms: under CI's
	// load a node busy with 50 exits a second may miss 0.9 s of adverts,
	// and a peer taken for gone has its elements run again elsewhere.
	a := startNode(t, t.TempDir(), "--resources", res, "--advert-interval", "2s")
	b := startNode(t, t.TempDir(), "--resources", res, "--advert-interval", "2s", "--bootstrap", tcpAddr(t, a.id()))
	seeEachOther(t, a, b)

	stamps, err := os.MkdirTemp("", "agora-e2e-array-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(stamps) })
	if err := os.Chmod(stamps, 0o1777); err != nil { // tasks run as users of their own
		t.Fatal(err)
	}
	script := fmt.Sprintf(`s=$(date +%%s%%N); sleep 1.5; echo "$s $(date +%%s%%N)" > %s/$AGORA_ARRAY_INDEX.$AGORA_ATTEMPT`, stamps)
	spec := writeFile(t, "array.yaml", fmt.Sprintf(`name: sweep
tasks:
  - name: el
    array: "0-%d%%%d"
    retries: 2
    command: [sh, -c, %q]
    resources: {cpu: 1, memory: 64MiB}
`, elements-1, throttle, script))
	out, errs, code := agora(t, "submit", "--api", a.api, "--json", spec)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	id := jobID(out)
	start := time.Now()
	var st jobStatus
	waitfor.Every(t, 8*time.Minute, 500*time.Millisecond, "the array to finish", func() bool {
		st = e2eStatus(t, a.api, id)
		return terminal(st.State)
	})
	t.Logf("%d elements in %v", elements, time.Since(start).Round(time.Second))
	if st.State != "succeeded" {
		t.Fatalf("array %s: %s", st.State, st.Reason)
	}

	type span struct{ from, to int64 }
	var spans []span
	files, _ := os.ReadDir(stamps)
	runs := map[int]int{}
	for _, f := range files {
		idx, _, _ := strings.Cut(f.Name(), ".")
		i, err := strconv.Atoi(idx)
		if err != nil {
			t.Fatalf("stamp file %s", f.Name())
		}
		runs[i]++
		b, err := os.ReadFile(filepath.Join(stamps, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var s span
		if _, err := fmt.Sscan(string(b), &s.from, &s.to); err != nil {
			t.Fatalf("stamp %s: %q", f.Name(), b)
		}
		spans = append(spans, s)
	}
	// Each index runs once, but for an attempt the node lost or that
	// failed (the first CI run under full load saw one element's first
	// attempt lost and its second fail with exit 2, cause not yet found):
	// those are retried, as the spec allows, and logged.
	rerun := 0
	for i := range elements {
		switch {
		case runs[i] == 0:
			t.Errorf("index %d never ran", i)
		case runs[i] > 1:
			rerun++
			if rerun <= 5 {
				for _, ts := range st.Tasks {
					if ts.Replica == i {
						t.Logf("index %d left %d stamps (attempts retried): %+v", i, runs[i], ts.History)
					}
				}
			}
		}
	}
	if rerun > 0 {
		t.Errorf("%d indices ran more than once", rerun)
	}
	if len(runs) != elements {
		t.Errorf("%d distinct indices ran, want %d", len(runs), elements)
	}
	// The most running at once: a sweep over the starts and ends.
	type edge struct {
		at int64
		d  int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].d < edges[j].d
	})
	peak, now := 0, 0
	for _, e := range edges {
		now += e.d
		peak = max(peak, now)
	}
	t.Logf("at most %d elements running at once (throttle %d, room for 80)", peak, throttle)
	if peak > throttle {
		t.Fatalf("%d elements ran at once, over the throttle of %d", peak, throttle)
	}
	human, _, _ := agora(t, "status", "--api", a.api, id)
	if want := fmt.Sprintf("replicas:  el: %d: %d succeeded", elements, elements); !strings.Contains(human, want) {
		t.Errorf("agora status does not count the replicas:\n%s", strings.Join(strings.SplitN(human, "\n", 10)[:9], "\n"))
	}
	if c := st.Counts["el"]; c["succeeded"] != elements {
		t.Errorf("status --json counts %v", st.Counts)
	}
}
