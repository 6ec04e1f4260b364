package auth

import (
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// world is an authority, a delegate for site "edge", and their keys,
// drawn from a seeded source.
type world struct {
	rng       *rand.ChaCha8
	root      ed25519.PrivateKey
	book      *Book
	delegate  Issuer
	authority Issuer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{rng: rand.NewChaCha8([32]byte{1})}
	w.root = w.key(t)
	w.authority = Issuer{Key: w.root}
	w.book = NewBook(w.root.Public().(ed25519.PublicKey))
	dk := w.key(t)
	ch, err := w.authority.IssueDelegate("edge-admin", dk.Public().(ed25519.PublicKey), "edge", t0, 720*time.Hour, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	w.delegate = Issuer{Key: dk, Chain: ch}
	return w
}

func (w *world) key(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	k, err := NewKey(w.rng)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (w *world) user(t *testing.T, name string, admin bool, q Quota) Credential {
	t.Helper()
	k := w.key(t)
	ch, err := w.authority.IssueUser(name, k.Public().(ed25519.PublicKey), admin, q, t0, 720*time.Hour, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	return Credential{Key: k, Chain: ch}
}

func (w *world) node(t *testing.T, is Issuer, peer, site string) Chain {
	t.Helper()
	ch, err := is.IssueNode(peer, site, nil, t0, 720*time.Hour, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// resign signs a modified certificate again with key, as a forger
// holding that key could.
func resign(t *testing.T, c Cert, key ed25519.PrivateKey, rng *rand.ChaCha8) Cert {
	t.Helper()
	if err := c.Sign(key, rng); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestVerifyNode(t *testing.T) {
	w := newWorld(t)
	other := newWorld(t)
	other.rng = rand.NewChaCha8([32]byte{2})
	other.root = other.key(t)
	other.authority = Issuer{Key: other.root}
	good := w.node(t, w.authority, "peerA", "lab")
	viaDelegate := w.node(t, w.delegate, "peerE", "edge")
	tampered := append(Chain(nil), good...)
	tampered[0].Subject = "peerB"
	wrongSite := resign(t, Cert{Kind: Node, Subject: "peerF", Site: "lab", NotBefore: t0, NotAfter: t0.Add(time.Hour)}, w.delegate.Key, w.rng)
	userAsNode := w.user(t, "alice", false, NoQuota).Chain

	tests := []struct {
		name  string
		chain Chain
		peer  string
		now   time.Time
		want  string // "" valid
	}{
		{"admitted by the authority", good, "peerA", t0.Add(time.Hour), ""},
		{"admitted by a delegate of its site", viaDelegate, "peerE", t0.Add(time.Hour), ""},
		{"another peer's certificate", good, "peerB", t0.Add(time.Hour), "certifies another peer"},
		{"tampered subject", tampered, "peerB", t0.Add(time.Hour), "signature does not verify"},
		{"another authority", other.node(t, other.authority, "peerA", "lab"), "peerA", t0.Add(time.Hour), "not issued by this network's authority"},
		{"expired", good, "peerA", t0.Add(721 * time.Hour), "expired"},
		{"not yet valid", good, "peerA", t0.Add(-time.Hour), "not valid before"},
		{"within the clock skew", good, "peerA", t0.Add(-time.Minute), ""},
		{"delegate admitting to another site", append(Chain{wrongSite}, w.delegate.Chain...), "peerF", t0.Add(time.Hour), `site "lab" is not the site "edge"`},
		{"user certificate as a node's", userAsNode, "alice", t0.Add(time.Hour), "not a node certificate"},
		{"delegate chain without its delegate", Chain{viaDelegate[0]}, "peerE", t0.Add(time.Hour), "not issued by this network's authority"},
		{"empty chain", nil, "peerA", t0, "chain of 0 certificates"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.book.VerifyNode(tc.chain, tc.peer, tc.now)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
			// Only what depends on the checker's clock is untimely; the
			// rest no honest node accepts.
			if untimely := tc.want == "expired" || tc.want == "not valid before"; errors.Is(err, ErrUntimely) != untimely {
				t.Fatalf("%v: untimely %v, want %v", err, errors.Is(err, ErrUntimely), untimely)
			}
		})
	}
}

func TestRevocations(t *testing.T) {
	w := newWorld(t)
	now := t0.Add(time.Hour)
	a := w.node(t, w.authority, "peerA", "lab")
	e := w.node(t, w.delegate, "peerE", "edge")
	alice := w.user(t, "alice", false, NoQuota)
	revoke := func(target string, key ed25519.PrivateKey, chain Chain, at time.Time) (bool, error) {
		r, err := NewRevocation(target, at, key, chain)
		if err != nil {
			t.Fatal(err)
		}
		// What travels is the encoding.
		back, err := DecodeRevocation(r.Encode())
		if err != nil {
			t.Fatal(err)
		}
		return w.book.Revoke(back, at)
	}
	if _, err := w.book.VerifyNode(a, "peerA", now); err != nil {
		t.Fatal(err)
	}
	if added, err := revoke("peerA", w.root, nil, now); !added || err != nil {
		t.Fatalf("authority's revocation: %v %v", added, err)
	}
	if added, err := revoke("peerA", w.root, nil, now); added || err != nil {
		t.Fatalf("the same revocation again: %v %v", added, err)
	}
	if _, err := w.book.VerifyNode(a, "peerA", now); err == nil || !strings.Contains(err.Error(), "revoked") || !errors.Is(err, ErrUntimely) {
		t.Fatalf("revoked node: %v", err)
	}
	// A certificate issued after the revocation admits the node again.
	later := now.Add(time.Minute)
	again, err := w.authority.IssueNode("peerA", "lab", nil, later, time.Hour, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.book.VerifyNode(again, "peerA", later); err != nil {
		t.Fatalf("re-admitted node: %v", err)
	}
	// A delegate revokes nodes of its own site, and only nodes.
	if added, err := revoke("peerE", w.delegate.Key, w.delegate.Chain, now); !added || err != nil {
		t.Fatalf("delegate revoking its site's node: %v %v", added, err)
	}
	if _, err := w.book.VerifyNode(e, "peerE", now); err == nil {
		t.Fatal("node revoked by its delegate still admitted")
	}
	b := w.node(t, w.authority, "peerL", "lab")
	if _, err := revoke("peerL", w.delegate.Key, w.delegate.Chain, now); err != nil {
		t.Fatal(err) // taken, but scoped to site edge
	}
	if _, err := w.book.VerifyNode(b, "peerL", now); err != nil {
		t.Fatalf("a delegate's revocation reached another site's node: %v", err)
	}
	if _, err := revoke("user:alice", w.delegate.Key, w.delegate.Chain, now); err == nil || !strings.Contains(err.Error(), "only nodes") {
		t.Fatalf("delegate revoking a user: %v", err)
	}
	if _, err := revoke("peerA", w.key(t), nil, now); err == nil || !strings.Contains(err.Error(), "not signed by this network's authority") || errors.Is(err, ErrUntimely) {
		t.Fatalf("stranger's revocation: %v", err)
	}
	// Revoking a user stops their credential; revoking the delegate
	// stops every node it admitted.
	if _, err := w.book.VerifyUser(alice.Chain, now); err != nil {
		t.Fatal(err)
	}
	if _, err := revoke("user:alice", w.root, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := w.book.VerifyUser(alice.Chain, now); err == nil {
		t.Fatal("revoked user still verifies")
	}
	e2, err := w.delegate.IssueNode("peerE2", "edge", nil, t0, time.Hour*720, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := revoke("delegate:edge-admin", w.root, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := w.book.VerifyNode(e2, "peerE2", now); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("node of a revoked delegate: %v", err)
	}
	// A clone is independent; the list persists in time order.
	c := w.book.Clone()
	if _, err := revoke("peerZ", w.root, nil, now); err != nil {
		t.Fatal(err)
	}
	if len(c.Revocations())+1 != len(w.book.Revocations()) {
		t.Fatal("a clone shared its revocations")
	}
	// A revocation dated in the future is refused.
	if _, err := revoke("peerY", w.root, nil, now.Add(time.Hour)); err != nil {
		t.Fatal(err) // dated at its own "now": fine
	}
	r, _ := NewRevocation("peerX", now.Add(time.Hour), w.root, nil)
	if _, err := w.book.Revoke(r, now); err == nil || !strings.Contains(err.Error(), "future") || !errors.Is(err, ErrUntimely) {
		t.Fatalf("future revocation: %v", err)
	}
	r.Target = "peerW" // tampered
	if _, err := w.book.Revoke(r, now.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "signature") || errors.Is(err, ErrUntimely) {
		t.Fatalf("tampered revocation: %v", err)
	}
}

func TestTicketAndToken(t *testing.T) {
	w := newWorld(t)
	alice := w.user(t, "alice", false, NoQuota)
	bob := w.user(t, "bob", false, NoQuota)
	specText := []byte("name: j\ntasks:\n  - {name: a, command: [true]}\n")
	tk, err := NewTicket(specText, t0, alice.Key, alice.Chain, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeTicket(tk.Encode())
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.book.VerifyTicket(&back, t0.Add(time.Hour))
	if err != nil || id.Name != "alice" {
		t.Fatalf("ticket: %+v %v", id, err)
	}
	if back.JobID() != tk.JobID() || !strings.HasPrefix(tk.JobID(), "j-") || len(tk.JobID()) != 18 {
		t.Fatalf("job ID %q, %q", tk.JobID(), back.JobID())
	}
	if err := back.CheckFresh(t0.Add(TicketMaxAge + time.Second)); err == nil {
		t.Fatal("stale ticket accepted")
	}
	forged := back
	forged.Spec = []byte("name: j\ntasks:\n  - {name: a, command: [rm, -rf, /]}\n")
	if _, err := w.book.VerifyTicket(&forged, t0); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("forged spec: %v", err)
	}
	stolen := back
	stolen.Chain = bob.Chain // alice's signature under bob's name
	if _, err := w.book.VerifyTicket(&stolen, t0); err == nil {
		t.Fatal("a ticket verified under another user's chain")
	}

	tok, err := NewToken(ActCancel, "j-1", t0, bob.Key, bob.Chain, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseTokenText(tok.Text())
	if err != nil {
		t.Fatal(err)
	}
	if id, err := w.book.VerifyToken(&parsed, "j-1", t0.Add(time.Minute), ActCancel); err != nil || id.Name != "bob" {
		t.Fatalf("token: %+v %v", id, err)
	}
	for _, c := range []struct {
		act  Action
		job  string
		now  time.Time
		want string
	}{
		{ActLogs, "j-1", t0, "used for [logs]"},
		{ActCancel, "j-2", t0, "used for [cancel]"},
		{ActCancel, "j-1", t0.Add(Skew + time.Second), "from this node's clock"},
		{ActCancel, "j-1", t0.Add(-Skew - time.Second), "from this node's clock"},
	} {
		if _, err := w.book.VerifyToken(&parsed, c.job, c.now, c.act); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s at %v: %v, want %q", c.act, c.job, c.now.Sub(t0), err, c.want)
		}
	}
}

// TestSessionToken: a dashboard session signs in only to the node it
// names, within Skew of its signing, and then stands for its user's
// reads — of any job — for SessionTTL, never for a change.
func TestSessionToken(t *testing.T) {
	w := newWorld(t)
	alice := w.user(t, "alice", false, NoQuota)
	tok, err := NewToken(ActSession, "peerA", t0, alice.Key, alice.Chain, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := w.book.VerifySession(&tok, "peerA", t0.Add(time.Minute)); err != nil || id.Name != "alice" {
		t.Fatalf("sign-in: %+v %v", id, err)
	}
	for _, c := range []struct {
		node string
		now  time.Time
		want string
	}{
		{"peerB", t0, "presented to"},
		{"peerA", t0.Add(Skew + time.Second), "from this node's clock"},
	} {
		if _, err := w.book.VerifySession(&tok, c.node, c.now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sign-in to %s at %v: %v, want %q", c.node, c.now.Sub(t0), err, c.want)
		}
	}
	if _, err := w.book.VerifyToken(&tok, "j-9", t0.Add(SessionTTL-time.Minute), ActStatus, ActLogs); err != nil {
		t.Fatalf("a session's read of another job, late in its life: %v", err)
	}
	for _, c := range []struct {
		act  Action
		now  time.Time
		want string
	}{
		{ActCancel, t0, "only reads"},
		{ActDrain, t0, "only reads"},
		{ActStatus, t0.Add(SessionTTL + time.Second), "lapsed"},
	} {
		if _, err := w.book.VerifyToken(&tok, "j-9", c.now, c.act); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s at %v: %v, want %q", c.act, c.now.Sub(t0), err, c.want)
		}
	}
	other, err := NewToken(ActStatus, "peerA", t0, alice.Key, alice.Chain, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.book.VerifySession(&other, "peerA", t0); err == nil {
		t.Fatal("a status token signed in to the dashboard")
	}
}

func TestDecodeRefusesBadInput(t *testing.T) {
	w := newWorld(t)
	ch := w.node(t, w.authority, "peerA", "lab")
	enc := ch[0].Encode()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"other magic", append([]byte{0x00}, enc[1:]...), "magic"},
		{"other version", append([]byte{certMagic, 9}, enc[2:]...), "version 9"},
		{"truncated", enc[:len(enc)-10], "truncated"},
		{"trailing bytes", append(append([]byte(nil), enc...), 1, 2), "bytes after the end"},
		{"oversized", make([]byte, maxCertBytes+1), "over the limit"},
	} {
		if _, err := DecodeCert(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := DecodeChain(append([]byte{9}, ch.Encode()[1:]...)); err == nil {
		t.Error("chain of 9 certificates accepted")
	}
	if _, err := DecodeTicket([]byte{ticketMagic, 1, 0}); err == nil {
		t.Error("empty ticket accepted")
	}
	if _, err := ParseTokenText("!!"); err == nil {
		t.Error("bad token text accepted")
	}
	if _, err := ParseAuthority("agora-authority:abc"); err == nil {
		t.Error("short authority key accepted")
	}
	if _, err := ParseAuthority("ssh-ed25519 AAAA"); err == nil || !strings.Contains(err.Error(), "does not start with") {
		t.Errorf("foreign key text: %v", err)
	}
	pub, err := ParseAuthority(AuthorityText(w.book.Authority()) + "\n")
	if err != nil || !samePub(pub, w.book.Authority()) {
		t.Fatalf("authority text round trip: %v", err)
	}
}

func TestCredentialPEM(t *testing.T) {
	w := newWorld(t)
	alice := w.user(t, "alice", true, NoQuota)
	back, err := ParseCredential(alice.PEM())
	if err != nil || !back.Key.Equal(alice.Key) || len(back.Chain) != 1 || !back.Chain[0].Admin {
		t.Fatalf("credential round trip: %v", err)
	}
	bob := w.user(t, "bob", false, NoQuota)
	mixed := append(EncodeKey(UserKey, bob.Key), alice.Chain.PEM()...)
	if _, err := ParseCredential(mixed); err == nil || !strings.Contains(err.Error(), "not the one") {
		t.Fatalf("key of another user: %v", err)
	}
	if _, err := w.delegate.IssueUser("mallory", bob.Key.Public().(ed25519.PublicKey), true, NoQuota, t0, time.Hour, w.rng); err == nil {
		t.Fatal("a delegate issued a user certificate")
	}
	if _, err := w.delegate.IssueNode("peer", "lab", nil, t0, time.Hour, w.rng); err == nil {
		t.Fatal("a delegate admitted a node to another site")
	}
}

func TestAllowAndQuotas(t *testing.T) {
	alice := Identity{Name: "alice"}
	carol := Identity{Name: "carol", Admin: true}
	for _, c := range []struct {
		act  Action
		id   Identity
		rule string
	}{
		{ActCancel, alice, ""},
		{ActLogs, Identity{Name: "bob"}, RuleOwner},
		{ActSpec, Identity{Name: "bob"}, RuleOwner},
		{ActCancel, carol, ""},
		{ActJobs, Identity{Name: "bob"}, ""},
		{ActDrain, alice, RuleAdmin},
		{ActDrain, carol, ""},
		{ActUndrain, alice, RuleAdmin},
		{ActUndrain, carol, ""},
	} {
		err := Allow(c.act, c.id, "alice")
		var r *Refusal
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s by %s refused: %v", c.act, c.id.Name, err)
		case c.rule != "" && (!errors.As(err, &r) || r.Rule != c.rule):
			t.Errorf("%s by %s: %v, want rule %s", c.act, c.id.Name, err, c.rule)
		}
	}
	q := Quota{MaxCPU: 4000, MaxGPU: 0, MaxPriority: 5, Sites: []string{"lab"}, MaxRunningCPU: 8000, MaxRunningGPU: 2, MaxRunningJobs: 3}
	job := func(prio int, r resource.Request) *spec.Job {
		return &spec.Job{Name: "j", Priority: prio, Tasks: []spec.Task{{Name: "t", Request: r}}}
	}
	for _, c := range []struct {
		name string
		job  *spec.Job
		rule string
	}{
		{"within", job(5, resource.Request{CPU: 4000}), ""},
		{"too many CPUs", job(5, resource.Request{CPU: 4001}), RuleMaxCPU},
		{"a GPU", job(5, resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}), RuleMaxGPU},
		{"a GPU share", job(5, resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}}), RuleMaxGPU},
		{"priority", job(6, resource.Request{CPU: 1000}), RuleMaxPriority},
		{"another site", job(5, resource.Request{CPU: 1000, Site: "edge"}), RuleSites},
	} {
		err := CheckJob("alice", q, c.job)
		var r *Refusal
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.rule != "" && (!errors.As(err, &r) || r.Rule != c.rule):
			t.Errorf("%s: %v, want rule %s", c.name, err, c.rule)
		}
	}
	if err := CheckTask("alice", q, "t", resource.Request{CPU: 1000}, 5, "edge"); err == nil {
		t.Error("a node of another site may run alice's task")
	}
	if err := CheckJob("alice", NoQuota, job(10, resource.Request{CPU: 64000, GPU: resource.GPURequest{Count: 8}})); err != nil {
		t.Errorf("no quota: %v", err)
	}
}

// TestDetachSpec: a ticket without its spec, with the spec put back, is
// the ticket again; a detached ticket does not verify alone.
func TestDetachSpec(t *testing.T) {
	w := newWorld(t)
	alice := w.user(t, "alice", false, NoQuota)
	tk, err := NewTicket([]byte(`{"name":"j"}`), t0, alice.Key, alice.Chain, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	raw := tk.Encode()
	det, sp, err := DetachSpec(raw)
	if err != nil || string(sp) != `{"name":"j"}` || len(det) >= len(raw) {
		t.Fatalf("detach: %v %q", err, sp)
	}
	back, err := AttachSpec(det, sp)
	if err != nil || string(back) != string(raw) {
		t.Fatalf("attach: %v", err)
	}
	if _, err := AttachSpec(raw, sp); err == nil {
		t.Fatal("attached a spec to a ticket that had one")
	}
	d, err := DecodeTicket(det)
	if err == nil {
		if _, err := w.book.VerifyTicket(&d, t0); err == nil {
			t.Fatal("a detached ticket verified")
		}
	}
	other, _ := AttachSpec(det, []byte(`{"name":"k"}`))
	o, err := DecodeTicket(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.book.VerifyTicket(&o, t0); err == nil {
		t.Fatal("a ticket with another spec attached verified")
	}
}

// TestRunningLimitsInCert: a user certificate carries the running limits
// through its encoding; a version 1 certificate, which has none, still
// verifies and reads them as Unlimited.
func TestRunningLimitsInCert(t *testing.T) {
	w := newWorld(t)
	q := NoQuota
	q.MaxRunningCPU, q.MaxRunningGPU, q.MaxRunningJobs = 8000, 2, 3
	alice := w.user(t, "alice", false, q)
	back, err := DecodeChain(alice.Chain.Encode())
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.book.VerifyUser(back, t0)
	if err != nil || id.Quota.MaxRunningCPU != 8000 || id.Quota.MaxRunningGPU != 2 || id.Quota.MaxRunningJobs != 3 || !id.Quota.Running() {
		t.Fatalf("running limits read back as %+v (%v)", id.Quota, err)
	}
	old := Cert{Kind: User, Subject: "bob", Key: w.key(t).Public().(ed25519.PublicKey), Quota: NoQuota, NotBefore: t0, NotAfter: t0.Add(time.Hour), version: 1}
	old = resign(t, old, w.root, w.rng)
	enc := old.Encode()
	if enc[1] != 1 {
		t.Fatalf("a version 1 certificate encoded as version %d", enc[1])
	}
	c, err := DecodeCert(enc)
	if err != nil {
		t.Fatal(err)
	}
	id, err = w.book.VerifyUser(Chain{c}, t0)
	if err != nil || id.Quota.Running() {
		t.Fatalf("a version 1 user: %+v (%v)", id.Quota, err)
	}
}

// TestRenew: a renewed certificate keeps its subject, key, role, quota
// and site, is valid anew past the old one's end, and is issued only by
// the old one's issuer (or the authority above a delegate).
func TestRenew(t *testing.T) {
	w := newWorld(t)
	q := Quota{MaxCPU: 4000, MaxGPU: 1, MaxPriority: 7, MaxRunningCPU: Unlimited, MaxRunningGPU: Unlimited, MaxRunningJobs: Unlimited, Share: 3}
	alice := w.user(t, "alice", true, q)
	later := t0.Add(700 * time.Hour)
	ch, err := w.authority.Renew(alice.Chain, later, 720*time.Hour, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.book.VerifyUser(ch, t0.Add(1000*time.Hour)) // past the old one's end
	if err != nil {
		t.Fatalf("the renewed credential: %v", err)
	}
	if id.Name != "alice" || !id.Admin || id.Quota.MaxCPU != 4000 || id.Quota.Share != 3 || string(ch[0].Key) != string(alice.Chain[0].Key) {
		t.Fatalf("renewed as %+v", id)
	}
	if _, err := w.book.VerifyUser(alice.Chain, t0.Add(1000*time.Hour)); err == nil {
		t.Fatal("the old credential still valid")
	}
	if !ch.Expiry().Equal(later.Add(720 * time.Hour)) {
		t.Fatalf("expiry %v", ch.Expiry())
	}

	node, err := w.delegate.IssueNode("12D3KooWEdge", "edge", nil, t0, time.Hour, w.rng)
	if err != nil {
		t.Fatal(err)
	}
	for name, is := range map[string]Issuer{"its delegate": w.delegate, "the authority above it": w.authority} {
		if ch, err := is.Renew(node, later, time.Hour, w.rng); err != nil || ch[0].Subject != "12D3KooWEdge" || ch[0].Site != "edge" {
			t.Errorf("a node renewed by %s: %v", name, err)
		}
	}
	other := Issuer{Key: w.key(t)}
	if _, err := other.Renew(alice.Chain, later, time.Hour, w.rng); err == nil || !strings.Contains(err.Error(), "not issued by") {
		t.Errorf("another authority renewed alice: %v", err)
	}
	if _, err := w.delegate.Renew(alice.Chain, later, time.Hour, w.rng); err == nil {
		t.Error("a delegate renewed a user")
	}
}
