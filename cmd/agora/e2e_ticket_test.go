package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// postTicket posts a signed job to p's API and returns the status and
// the answer's id, manager and whether it named an existing job.
func postTicket(t *testing.T, p *proc, ticket []byte) (int, string, string, bool) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.api+"/v1/jobs", bytes.NewReader(ticket))
	req.Header.Set("Content-Type", api.TicketType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("post to %s: %v", p.api, err)
		return 0, "", "", false
	}
	defer resp.Body.Close()
	var a struct {
		ID       string `json:"id"`
		Manager  string `json:"manager"`
		Existing bool   `json:"existing"`
		Error    string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&a)
	if a.Error != "" {
		t.Logf("post to %s: %d %s", p.api, resp.StatusCode, a.Error)
	}
	return resp.StatusCode, a.ID, a.Manager, a.Existing
}

// TestTicketOnce (issue 43, done-when 1): one signed job posted to node A
// and then, at once, to the three other nodes is one job: A answers 201,
// every other node 200 naming the same job and A as its manager, every
// node's status names the same manager, and the command ran once (its
// marker file). Then again with A killed right after it accepted: the
// other nodes still answer the one job, whose record a copy holder takes
// over, and the command runs once. The task runs on node D only (a
// label), so that killing A kills no run of it.
func TestTicketOnce(t *testing.T) {
	ca := newCA(t)
	res := writeFile(t, "r.yaml", "cpu: 2\nmemory: 4GiB\ngpus: []\n")
	a := trustedNode(t, ca, "--resources", res)
	var nodes []*proc
	for _, label := range []string{"role=relay", "role=relay", "role=worker"} {
		nodes = append(nodes, trustedNode(t, ca, "--resources", res, "--label", label, "--bootstrap", tcpAddr(t, a.id())))
	}
	all := append([]*proc{a}, nodes...)
	ids := map[*proc]string{}
	for _, p := range all {
		ids[p] = p.id().PeerID
	}
	waitfor.Every(t, 20*time.Second, apiPoll, "every node to see the other three", func() bool {
		for _, p := range all {
			if len(p.peers()) < 3 {
				return false
			}
		}
		return true
	})
	credFile := filepath.Join(t.TempDir(), "alice.cred")
	if _, errs, code := agora(t, "user", "add", "--authority", ca, "alice", "--out", credFile); code != 0 {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(credFile)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := auth.ParseCredential(b)
	if err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	if err := os.Chmod(marks, 0o777); err != nil { // tasks may run as another user
		t.Fatal(err)
	}
	for round, killA := range []bool{false, true} {
		marker := filepath.Join(marks, fmt.Sprintf("ran-%d", round))
		spec := fmt.Sprintf("name: once-%d\ntasks:\n  - name: main\n    command: [sh, -c, \"echo x >> %s\"]\n    resources: {cpu: 100m, labels: {role: worker}}\n", round, marker)
		s, err := api.Sign(&cred, "POST", "/v1/jobs", "application/yaml", []byte(spec), time.Now(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		code, job, _, _ := postTicket(t, a, s.Body)
		if code != http.StatusCreated || job == "" {
			t.Fatalf("round %d: A's answer to the first post: %d %q", round, code, job)
		}
		if killA {
			a.kill()
		}
		var wg sync.WaitGroup
		for _, p := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, id, mgr, existing := postTicket(t, p, s.Body)
				if code != http.StatusOK || id != job || !existing || mgr != ids[a] {
					t.Errorf("round %d: %s's answer to the same ticket: %d %q manager %q existing %v; want 200 naming %s managed by A (%s)",
						round, p.api, code, id, mgr, existing, job, ids[a])
				}
			}()
		}
		wg.Wait()
		live := nodes
		if !killA {
			live = all
		}
		waitfor.Every(t, 60*time.Second, apiPoll, "the job to succeed, every live node naming one manager", func() bool {
			managers := map[string]bool{}
			for _, p := range live {
				out, _, code := agora(t, "status", "--api", p.api, "--credential", credFile, "--json", job)
				var st api.JobStatus
				if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State != "succeeded" {
					return false
				}
				managers[st.Manager] = true
			}
			return len(managers) == 1
		})
		got, err := os.ReadFile(marker)
		if err != nil || strings.Count(string(got), "x") != 1 {
			t.Fatalf("round %d: the command ran %d times (%v), want once", round, strings.Count(string(got), "x"), err)
		}
	}
}
