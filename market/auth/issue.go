package auth

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"time"
)

// Issuer signs certificates: the authority's key (Chain empty) or a
// delegate's key with its chain.
type Issuer struct {
	Key   ed25519.PrivateKey
	Chain Chain
}

// issue signs c as is valid from now for valid, and returns its chain.
func (is Issuer) issue(c Cert, now time.Time, valid time.Duration, rand io.Reader) (Chain, error) {
	if valid <= 0 {
		return nil, fmt.Errorf("auth: validity %v: must be positive", valid)
	}
	if len(is.Chain)+1 > MaxChain {
		return nil, fmt.Errorf("auth: a chain holds at most %d certificates", MaxChain)
	}
	if len(is.Chain) > 0 && c.Kind == User {
		return nil, errors.New("auth: users are admitted by the authority only")
	}
	if len(is.Chain) > 0 && c.Site != is.Chain[0].Site {
		return nil, fmt.Errorf("auth: delegate %s admits to site %q only", is.Chain[0].Subject, is.Chain[0].Site)
	}
	c.NotBefore = now.UTC().Truncate(time.Second)
	c.NotAfter = c.NotBefore.Add(valid)
	if err := c.Sign(is.Key, rand); err != nil {
		return nil, err
	}
	return append(Chain{c}, is.Chain...), nil
}

// IssueNode admits a node: its peer ID, site and roles.
func (is Issuer) IssueNode(peerID, site string, roles []string, now time.Time, valid time.Duration, rand io.Reader) (Chain, error) {
	return is.issue(Cert{Kind: Node, Subject: peerID, Site: site, Roles: roles}, now, valid, rand)
}

// IssueUser certifies a user's key, role and quota.
func (is Issuer) IssueUser(name string, key ed25519.PublicKey, admin bool, q Quota, now time.Time, valid time.Duration, rand io.Reader) (Chain, error) {
	return is.issue(Cert{Kind: User, Subject: name, Key: key, Admin: admin, Quota: q}, now, valid, rand)
}

// IssueDelegate lets a site admin's key admit nodes for site.
func (is Issuer) IssueDelegate(name string, key ed25519.PublicKey, site string, now time.Time, valid time.Duration, rand io.Reader) (Chain, error) {
	return is.issue(Cert{Kind: Delegate, Subject: name, Key: key, Site: site}, now, valid, rand)
}

// Credential is what a user signs with: the private key and the chain
// that certifies it.
type Credential struct {
	Key   ed25519.PrivateKey
	Chain Chain
}

// PEM is the credential file's contents: the key, then the chain.
func (c Credential) PEM() []byte {
	return append(EncodeKey(UserKey, c.Key), c.Chain.PEM()...)
}

// ParseCredential reads a credential file's contents and checks that its
// key is the one its certificate certifies.
func ParseCredential(data []byte) (Credential, error) {
	key, err := ParseKey(data, UserKey)
	if err != nil {
		return Credential{}, err
	}
	ch, err := ParseChainPEM(data)
	if err != nil {
		return Credential{}, err
	}
	if ch[0].Kind != User || !samePub(ch[0].Key, key.Public().(ed25519.PublicKey)) {
		return Credential{}, errors.New("auth: the credential's key is not the one its user certificate certifies")
	}
	return Credential{Key: key, Chain: ch}, nil
}
