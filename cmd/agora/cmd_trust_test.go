package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market/auth"
)

// run runs the CLI in process.
func run(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := runMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

func newPeerID(t *testing.T) string {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// TestAuthorityCommands: init writes a 0600 key and the public key whose
// text it prints, and never overwrites; admit, user add and revoke sign
// what the book then verifies; a delegate admits nodes to its site only.
func TestAuthorityCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	out, errs, code := run("authority", "init", dir)
	if code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	root, err := auth.ParseAuthority(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "authority.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("authority.key: %v %v", fi.Mode(), err)
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "authority.pub"))
	if strings.TrimSpace(string(pub)) != strings.TrimSpace(out) {
		t.Fatalf("authority.pub %q, printed %q", pub, out)
	}
	if _, errs, code := run("authority", "init", dir); code != 2 || !strings.Contains(errs, "refusing to overwrite") {
		t.Fatalf("second init: %d %s", code, errs)
	}
	book := auth.NewBook(root)
	now := time.Now()

	peerID := newPeerID(t)
	certFile := filepath.Join(t.TempDir(), "node.crt")
	if _, errs, code := run("admit", "--authority", dir, peerID, "--site", "lab", "--valid", "1h", "--out", certFile); code != 0 {
		t.Fatalf("admit: %d %s", code, errs)
	}
	b, _ := os.ReadFile(certFile)
	ch, err := auth.ParseChainPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := book.VerifyNode(ch, peerID, now); err != nil || id.Site != "lab" || id.NotAfter.Sub(now) > time.Hour+time.Minute {
		t.Fatalf("admitted node: %+v %v", id, err)
	}

	credFile := filepath.Join(t.TempDir(), "alice.cred")
	if _, errs, code := run("user", "add", "--authority", dir, "alice", "--max-cpu", "2", "--max-gpu", "0", "--max-priority", "5", "--out", credFile); code != 0 {
		t.Fatalf("user add: %d %s", code, errs)
	}
	if fi, _ := os.Stat(credFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("credential mode %v", fi.Mode())
	}
	cb, _ := os.ReadFile(credFile)
	cred, err := auth.ParseCredential(cb)
	if err != nil {
		t.Fatal(err)
	}
	id, err := book.VerifyUser(cred.Chain, now)
	if err != nil || id.Name != "alice" || id.Admin || id.Quota.MaxCPU != 2000 || id.Quota.MaxGPU != 0 || id.Quota.MaxPriority != 5 {
		t.Fatalf("alice: %+v %v", id, err)
	}

	revFile := filepath.Join(t.TempDir(), "alice.rev")
	if _, errs, code := run("revoke", "--authority", dir, "user:alice", "--out", revFile); code != 0 {
		t.Fatalf("revoke: %d %s", code, errs)
	}
	rb, _ := os.ReadFile(revFile)
	r, err := auth.ParseRevocationPEM(rb)
	if err != nil {
		t.Fatal(err)
	}
	if added, err := book.Revoke(r, time.Now()); !added || err != nil {
		t.Fatalf("revocation: %v %v", added, err)
	}
	if _, err := book.VerifyUser(cred.Chain, time.Now()); err == nil {
		t.Fatal("revoked user still verifies")
	}

	// A delegate for site edge.
	ddir := filepath.Join(t.TempDir(), "edge-ca")
	if _, errs, code := run("authority", "delegate", "--authority", dir, "edge-admin", "--site", "edge", "--out", ddir); code != 0 {
		t.Fatalf("delegate: %d %s", code, errs)
	}
	edgePeer := newPeerID(t)
	out, errs, code = run("admit", "--authority", ddir, edgePeer, "--site", "edge")
	if code != 0 {
		t.Fatalf("admit by delegate: %d %s", code, errs)
	}
	ech, err := auth.ParseChainPEM([]byte(out))
	if err != nil || len(ech) != 2 {
		t.Fatalf("delegate's chain: %d certificates, %v", len(ech), err)
	}
	if _, err := book.VerifyNode(ech, edgePeer, time.Now()); err != nil {
		t.Fatalf("node admitted by the delegate: %v", err)
	}
	if _, errs, code := run("admit", "--authority", ddir, edgePeer, "--site", "lab"); code != 2 || !strings.Contains(errs, `site "edge" only`) {
		t.Fatalf("delegate admitting to another site: %d %s", code, errs)
	}
	if _, errs, code := run("user", "add", "--authority", ddir, "mallory"); code != 2 || !strings.Contains(errs, "authority only") {
		t.Fatalf("delegate adding a user: %d %s", code, errs)
	}
}

// TestAuthorityCommandsBadInput: every bad input exits 2 naming what is
// wrong, and writes nothing.
func TestAuthorityCommandsBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if _, _, code := run("authority", "init", dir); code != 0 {
		t.Fatal("init")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"authority"}, "usage"},
		{[]string{"authority", "init"}, "missing DIR"},
		{[]string{"admit", newPeerID(t)}, "--authority DIR is required"},
		{[]string{"admit", "--authority", dir, "not-a-peer"}, "is not a peer ID"},
		{[]string{"admit", "--authority", t.TempDir(), newPeerID(t)}, "authority.pub"},
		{[]string{"admit", "--authority", dir, newPeerID(t), "--valid", "-1h"}, "must be positive"},
		{[]string{"user", "add", "--authority", dir, "bad name"}, "user name"},
		{[]string{"user", "add", "--authority", dir, "bob", "--max-cpu", "lots"}, "--max-cpu"},
		{[]string{"user", "add", "--authority", dir, "bob", "--max-gpu", "-2"}, "must be 0 or more"},
		{[]string{"user"}, "usage"},
		{[]string{"revoke", "user:x"}, "give --authority"},
		{[]string{"revoke", "--authority", dir, "--api", "127.0.0.1:1", "user:x"}, "not both"},
		{[]string{"revoke", "--api", "127.0.0.1:1", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"revoke", "--api", "127.0.0.1:1", filepath.Join(dir, "authority.pub")}, "no AGORA REVOCATION block"},
	} {
		_, errs, code := run(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
