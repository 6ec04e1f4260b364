package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestUserRunningLimitNetwork (issue 43, done-when 4), on the real
// binary: alice may run one core at once in the whole network; four
// one-core jobs of hers submitted at once, two through each of two
// nodes, never overlap (their own start and end times say so), a waiting
// one names the rule, and all four succeed.
func TestUserRunningLimitNetwork(t *testing.T) {
	ca := newCA(t)
	res := writeFile(t, "r.yaml", "cpu: 4\nmemory: 4GiB\ngpus: []\n")
	a := trustedNode(t, ca, "--resources", res)
	b := trustedNode(t, ca, "--resources", res, "--bootstrap", tcpAddr(t, a.id()))
	seeEachOther(t, a, b)
	cred := filepath.Join(t.TempDir(), "alice.cred")
	if _, errs, code := agora(t, "user", "add", "--authority", ca, "alice", "--max-running-cpu", "1", "--out", cred); code != 0 {
		t.Fatal(errs)
	}
	marks := t.TempDir()
	if err := os.Chmod(marks, 0o777); err != nil { // tasks may run as users of their own
		t.Fatal(err)
	}
	var mu sync.Mutex
	var jobs []string
	var wg sync.WaitGroup
	for i, p := range []*proc{a, a, b, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := fmt.Sprintf("date +%%s.%%N > %s/start-%d; sleep 1.5; date +%%s.%%N > %s/end-%d", marks, i, marks, i)
			out, errs, code := agora(t, "run", "--api", p.api, "--credential", cred, "--cpu", "1", "--name", fmt.Sprintf("limited-%d", i), "--", "sh", "-c", script)
			if code != 0 {
				t.Errorf("submission %d: %s", i, errs)
				return
			}
			mu.Lock()
			jobs = append(jobs, strings.TrimSpace(out))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	sawRule := false
	waitfor.Every(t, 90*time.Second, apiPoll, "all four jobs to succeed", func() bool {
		done := 0
		for _, p := range []*proc{a, b} {
			out, _, _ := agora(t, "jobs", "--api", p.api, "--credential", cred, "--all", "--json")
			sawRule = sawRule || strings.Contains(out, "quota.max-running-cpu")
		}
		for _, j := range jobs {
			out, _, _ := agora(t, "status", "--api", a.api, "--credential", cred, j)
			sawRule = sawRule || strings.Contains(out, "quota.max-running-cpu")
			if strings.Contains(out, "succeeded") {
				done++
			}
		}
		return done == len(jobs)
	})
	type span struct{ start, end float64 }
	var spans []span
	for i := range 4 {
		read := func(name string) float64 {
			b, err := os.ReadFile(filepath.Join(marks, fmt.Sprintf("%s-%d", name, i)))
			if err != nil {
				t.Fatalf("job %d: %v", i, err)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		spans = append(spans, span{read("start"), read("end")})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			t.Errorf("two of alice's jobs ran at once (%.2f–%.2f and %.2f–%.2f), over her limit of one core", spans[i-1].start, spans[i-1].end, spans[i].start, spans[i].end)
		}
	}
	if !sawRule {
		t.Error("no waiting job's status named quota.max-running-cpu")
	}
}
