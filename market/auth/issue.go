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

// Renew issues old's first certificate again, valid from now for valid:
// the same kind, subject, key, site, roles, role and quota, a new serial.
// The issuer must be the one that signed it, the authority above the
// delegate that did, or a delegate renewing a node of its site that the
// authority signed: renewing never admits anyone new.
func (is Issuer) Renew(old Chain, now time.Time, valid time.Duration, rand io.Reader) (Chain, error) {
	if len(old) == 0 {
		return nil, errors.New("auth: renew: an empty chain")
	}
	c := old[0]
	signer := is.Key.Public().(ed25519.PublicKey)
	ok := string(c.Issuer) == string(signer)
	switch {
	case !ok && len(is.Chain) == 0:
		ok = string(old[len(old)-1].Issuer) == string(signer) // a delegate's node, by the authority above it
	case !ok:
		ok = string(c.Issuer) == string(is.Chain[len(is.Chain)-1].Issuer) // the authority's node, by a delegate of its site
	}
	if !ok {
		return nil, fmt.Errorf("auth: renew: %s %s was not issued by this authority or delegate", c.Kind, c.Subject)
	}
	if c.Kind == Delegate && len(is.Chain) > 0 {
		return nil, errors.New("auth: renew: delegates are renewed by the authority")
	}
	return is.issue(Cert{Kind: c.Kind, Subject: c.Subject, Key: c.Key, Site: c.Site, Roles: c.Roles, Admin: c.Admin, Quota: c.Quota}, now, valid, rand)
}

// RenewWarning is how long before a certificate expires its holder is
// told to renew it: a node in its log, a user by the CLI.
const RenewWarning = 7 * 24 * time.Hour

// Expiry is when the chain stops being valid: its earliest NotAfter.
func (ch Chain) Expiry() time.Time {
	if len(ch) == 0 {
		return time.Time{}
	}
	return chainExpiry(ch)
}
