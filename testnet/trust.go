package testnet

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node"
)

// Authority is a cluster authority for tests: it admits testnet nodes
// and makes user credentials, as agora authority, admit and user add do.
type Authority struct {
	t    testing.TB
	key  ed25519.PrivateKey
	Text string // the authority's public key, as --trust takes it
}

// NewAuthority creates an authority.
func NewAuthority(t testing.TB) *Authority {
	t.Helper()
	k, err := auth.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Authority{t: t, key: k, Text: auth.AuthorityText(k.Public().(ed25519.PublicKey))}
}

// Admit gives the node about to start with c an identity and a
// certificate for site, and makes it trust the authority.
func (a *Authority) Admit(c *node.Config, site string) {
	a.t.Helper()
	id, err := node.InitIdentity(c.DataDir)
	if err != nil {
		a.t.Fatal(err)
	}
	ch, err := auth.Issuer{Key: a.key}.IssueNode(id.String(), site, nil, time.Now(), time.Hour, rand.Reader)
	if err != nil {
		a.t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(c.DataDir), "node.crt")
	if err := os.WriteFile(path, ch.PEM(), 0o600); err != nil {
		a.t.Fatal(err)
	}
	c.Trust, c.CertFile, c.Site = a.Text, path, site
}

// User makes a user's credential.
func (a *Authority) User(name string, admin bool, q auth.Quota) auth.Credential {
	a.t.Helper()
	k, err := auth.NewKey(rand.Reader)
	if err != nil {
		a.t.Fatal(err)
	}
	ch, err := auth.Issuer{Key: a.key}.IssueUser(name, k.Public().(ed25519.PublicKey), admin, q, time.Now(), time.Hour, rand.Reader)
	if err != nil {
		a.t.Fatal(err)
	}
	return auth.Credential{Key: k, Chain: ch}
}

// Revocation signs a revocation of target (a peer ID or "user:NAME").
func (a *Authority) Revocation(target string) auth.Revocation {
	a.t.Helper()
	r, err := auth.NewRevocation(target, time.Now(), a.key, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	return r
}

// Book is a book of the authority, as a node trusting it starts with.
func (a *Authority) Book() *auth.Book {
	return auth.NewBook(a.key.Public().(ed25519.PublicKey))
}

// Chain is a node certificate of the authority for peer id, valid for
// an hour: what Admit writes, for a host that is not a testnet node.
func (a *Authority) Chain(id string, site string) auth.Chain {
	a.t.Helper()
	ch, err := auth.Issuer{Key: a.key}.IssueNode(id, site, nil, time.Now(), time.Hour, rand.Reader)
	if err != nil {
		a.t.Fatal(err)
	}
	return ch
}
