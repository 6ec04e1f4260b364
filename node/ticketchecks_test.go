package node

import (
	"crypto/ed25519"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// TestTicketChecks: Books sharing the node's memo take each other's
// verified signatures (and those verified ahead of them); a ticket with
// another spec or under another chain does not pass on the memo; a Book
// that took a revocation refuses the ticket though its signature is
// remembered; and the checks are safe from many goroutines at once.
func TestTicketChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.NewChaCha8([32]byte{3})
	root, err := auth.NewKey(rng)
	if err != nil {
		t.Fatal(err)
	}
	user := func(name string) auth.Credential {
		k, err := auth.NewKey(rng)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := auth.Issuer{Key: root}.IssueUser(name, k.Public().(ed25519.PublicKey), false, auth.NoQuota, t0.Add(-time.Hour), 24*time.Hour, rng)
		if err != nil {
			t.Fatal(err)
		}
		return auth.Credential{Key: k, Chain: ch}
	}
	alice, mallory := user("alice"), user("mallory")
	js, err := spec.Parse([]byte(`{"name": "j", "tasks": [{"name": "t", "command": ["true"]}]}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := spec.Canonical(js)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := auth.NewTicket(canon, t0, alice.Key, alice.Chain, rng)
	if err != nil {
		t.Fatal(err)
	}
	c := newTicketChecks()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				c.PrepareSubmission(tk.Encode())
			}
		}()
	}
	wg.Wait()
	if len(c.sigs) != 1 || len(c.specs) != 1 {
		t.Fatalf("after preparing one ticket: %d signatures, %d specs remembered", len(c.sigs), len(c.specs))
	}
	book := auth.NewBook(root.Public().(ed25519.PublicKey))
	a, b := book.Clone(), book.Clone()
	a.ShareTickets(c)
	b.ShareTickets(c)
	if id, err := b.VerifyTicket(&tk, t0); err != nil || id.Name != "alice" {
		t.Fatalf("a book sharing the memo: %v %v", id, err)
	}
	forged := tk
	forged.Spec = []byte(`{"name":"k"}`)
	if _, err := a.VerifyTicket(&forged, t0); err == nil || c.Verify(&forged) {
		t.Fatal("a ticket with another spec passed on the memo")
	}
	moved := tk
	moved.Chain = mallory.Chain
	if c.Verify(&moved) {
		t.Fatal("alice's signature passed under another user's chain")
	}
	r, err := auth.NewRevocation("user:alice", t0, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Revoke(r, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.VerifyTicket(&tk, t0); err == nil {
		t.Fatal("a revoked user's ticket passed on the memo")
	}
	if _, err := a.VerifyTicket(&tk, t0); err != nil {
		t.Fatalf("a book that did not take the revocation: %v", err)
	}
}
