package main

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// trustedNode initialises a node's identity, admits it with the authority
// in ca and starts it trusting that authority.
func trustedNode(t testing.TB, ca string, args ...string) *proc {
	t.Helper()
	data := t.TempDir()
	out, errs, code := agora(t, "node", "--data", data, "--init")
	if code != 0 {
		t.Fatalf("node --init: %d %s", code, errs)
	}
	cert := filepath.Join(t.TempDir(), "node.crt")
	if _, errs, code := agora(t, "admit", "--authority", ca, strings.TrimSpace(out), "--site", "lab", "--out", cert); code != 0 {
		t.Fatalf("admit: %s", errs)
	}
	p := startNode(t, data, append([]string{"--trust", filepath.Join(ca, "authority.pub"), "--cert", cert}, args...)...)
	p.cred = readerCredential(t, ca)
	return p
}

// newCA makes an authority in a test directory and returns it.
func newCA(t testing.TB) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca")
	if _, errs, code := agora(t, "authority", "init", ca); code != 0 {
		t.Fatal(errs)
	}
	return ca
}

// addUsers gives the authority in ca plain users of these names and
// returns their credential files by name.
func addUsers(t testing.TB, ca string, names ...string) map[string]string {
	t.Helper()
	cred := map[string]string{}
	for _, name := range names {
		cred[name] = filepath.Join(t.TempDir(), name+".cred")
		if _, errs, code := agora(t, "user", "add", "--authority", ca, name, "--out", cred[name]); code != 0 {
			t.Fatalf("user add %s: %s", name, errs)
		}
	}
	return cred
}

// seeEachOther waits until a lists b and b lists a.
func seeEachOther(t testing.TB, a, b *proc) {
	t.Helper()
	waitfor.Every(t, 15*time.Second, apiPoll, "A and B to see each other", func() bool {
		_, ab := a.peers()[b.id().PeerID]
		_, ba := b.peers()[a.id().PeerID]
		return ab && ba
	})
}

// readerCredential is the credential of user "reader" of the authority
// in ca, made on first use: what the test helpers read peers with.
func readerCredential(t testing.TB, ca string) string {
	t.Helper()
	path := filepath.Join(ca, "reader.cred")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if _, errs, code := agora(t, "user", "add", "--authority", ca, "reader", "--out", path); code != 0 {
		t.Fatalf("user add reader: %s", errs)
	}
	return path
}

// signedGet is GET path on p's API, signed with p's credential when it
// has one.
func signedGet(p *proc, path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+p.api+path, nil)
	if err != nil {
		return nil, err
	}
	if p.cred != "" {
		b, err := os.ReadFile(p.cred)
		if err != nil {
			return nil, err
		}
		c, err := auth.ParseCredential(b)
		if err != nil {
			return nil, err
		}
		s, err := api.Sign(&c, http.MethodGet, path, "", nil, time.Now(), rand.Reader)
		if err != nil {
			return nil, err
		}
		if s.Token != "" {
			req.Header.Set(api.CredentialHeader, s.Token)
		}
	}
	return http.DefaultClient.Do(req)
}

// TestUsersAndRoles: in a network with an authority, bob (a user) may not
// cancel, read the logs of or read the spec of alice's job, on the node
// that manages it or through another; carol (an admin) may cancel it;
// alice's quota of no GPUs refuses a GPU job at submit; a submission
// without a credential is refused, and so is every read but GET /v1/id
// and /metrics; a revoked user can no longer submit anywhere.
func TestUsersAndRoles(t *testing.T) {
	ca := newCA(t)
	res := writeFile(t, "r.yaml", "cpu: 2\nmemory: 4GiB\ngpus: []\n")
	a := trustedNode(t, ca, "--resources", res)
	b := trustedNode(t, ca, "--resources", res, "--bootstrap", tcpAddr(t, a.id()))
	cred := map[string]string{}
	for name, extra := range map[string][]string{"alice": {"--max-gpu", "0"}, "bob": nil, "carol": {"--admin"}} {
		cred[name] = filepath.Join(t.TempDir(), name+".cred")
		args := append([]string{"user", "add", "--authority", ca, name, "--out", cred[name]}, extra...)
		if _, errs, code := agora(t, args...); code != 0 {
			t.Fatalf("user add %s: %s", name, errs)
		}
	}
	// Both ways: B finds a job it does not manage by asking the peers of
	// its view, and A seeing B says nothing of whether B's view holds A.
	seeEachOther(t, a, b)

	out, errs, code := agora(t, "run", "--api", a.api, "--credential", cred["alice"], "--cpu", "100m", "--", "sleep", "60")
	if code != 0 {
		t.Fatalf("alice's run: exit %d: %s", code, errs)
	}
	job := strings.TrimSpace(out)
	// Without a credential every read but the node's identity and its
	// metrics is refused, the job's summary included, on the node that
	// manages it and through another.
	for _, p := range []*proc{a, b} {
		for path, want := range map[string]int{
			"/v1/jobs/" + job: 403, "/v1/jobs/" + job + "/spec": 403, "/v1/jobs/" + job + "/logs?task=main": 403,
			"/v1/jobs": 403, "/v1/cluster/jobs": 403, "/v1/peers": 403, "/v1/devices": 403,
			"/v1/id": 200, "/metrics": 200,
		} {
			resp, err := http.Get("http://" + p.api + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s without a credential: %d, want %d", path, resp.StatusCode, want)
			}
		}
	}
	// With one, a user who may not see the job's detail sees its summary.
	out, errs, code = agora(t, "status", "--api", b.api, "--credential", cred["bob"], job)
	if code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("bob's status of alice's job through B: exit %d, %q %q; want the owner shown", code, out, errs)
	}
	for _, api := range []string{a.api, b.api} {
		for _, args := range [][]string{{"cancel", job}, {"logs", job}, {"status", "--spec", job}} {
			full := append([]string{args[0], "--api", api, "--credential", cred["bob"]}, args[1:]...)
			_, errs, code := agora(t, full...)
			if code != 1 || !strings.Contains(errs, "owner-or-admin") {
				t.Errorf("bob: agora %s through %s: exit %d, stderr %q; want 1 naming the rule owner-or-admin", strings.Join(args, " "), api, code, errs)
			}
		}
	}
	// The cluster-wide list through B (the job is A's): alice and carol
	// (an admin) see it with its owner, bob sees none of it.
	for name, n := range map[string]int{"alice": 1, "carol": 1, "bob": 0} {
		out, errs, code := agora(t, "jobs", "--api", b.api, "--credential", cred[name], "--all", "--json")
		var rows []jobRow
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
			t.Fatalf("%s: jobs --all: exit %d: %s %s", name, code, out, errs)
		}
		if len(rows) != n || (n == 1 && (rows[0].ID != job || rows[0].Owner != "alice")) {
			t.Fatalf("%s: jobs --all through B lists %+v, want %d row(s) of alice's job", name, rows, n)
		}
	}
	out, errs, code = agora(t, "status", "--api", a.api, "--credential", cred["alice"], "--spec", job)
	if code != 0 || !strings.Contains(out, "sleep") {
		t.Fatalf("alice's own spec read: exit %d, %q %q", code, out, errs)
	}
	if st, _, _ := agora(t, "status", "--api", a.api, "--credential", cred["alice"], job); strings.Contains(st, "cancelled") {
		t.Fatal("bob's refused cancel cancelled the job")
	}
	if _, errs, code := agora(t, "cancel", "--api", b.api, "--credential", cred["carol"], job); code != 0 {
		t.Fatalf("carol's cancel through B: exit %d: %s", code, errs)
	}
	waitfor.Every(t, 10*time.Second, apiPoll, "the job to be cancelled", func() bool {
		st, _, _ := agora(t, "status", "--api", a.api, "--credential", cred["alice"], job)
		return strings.Contains(st, "cancelled")
	})

	_, errs, code = agora(t, "run", "--api", a.api, "--credential", cred["alice"], "--gpu", "1", "--", "true")
	if code != 1 || !strings.Contains(errs, "quota.max-gpu") {
		t.Errorf("alice's GPU job: exit %d, %q; want 1 naming quota.max-gpu", code, errs)
	}
	_, errs, code = agora(t, "run", "--api", a.api, "--", "true")
	if code != 1 || !strings.Contains(errs, "--credential") {
		t.Errorf("a submission without a credential: exit %d, %q; want 1 asking for --credential", code, errs)
	}

	// Revoke alice through A: B refuses her next submission too.
	rev := filepath.Join(t.TempDir(), "alice.rev")
	if _, errs, code := agora(t, "revoke", "--authority", ca, "user:alice", "--out", rev); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := agora(t, "revoke", "--api", a.api, rev); code != 0 {
		t.Fatalf("revoke --api: %s", errs)
	}
	waitfor.Every(t, 10*time.Second, apiPoll, "B to refuse alice", func() bool {
		_, errs, code := agora(t, "run", "--api", b.api, "--credential", cred["alice"], "--cpu", "100m", "--", "true")
		return code == 1 && strings.Contains(errs, "revoked")
	})
	if _, errs, code := agora(t, "run", "--api", b.api, "--credential", cred["bob"], "--cpu", "100m", "--", "true"); code != 0 {
		t.Fatalf("bob's submission after alice's revocation: %s", errs)
	}
}
