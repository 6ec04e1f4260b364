package auth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Skew is the clock difference between nodes a check tolerates: a
// certificate valid from a little in the future, a request signed a
// little ahead.
const Skew = 5 * time.Minute

// MaxRevocations bounds the revocations a node keeps; a network that
// needs more should rotate its authority.
const MaxRevocations = 4096

// Book is what a node knows to check certificates: its authority's key
// and the revocations it has seen. It is not safe for concurrent use;
// each owner (the market, the admission layer) keeps its own.
type Book struct {
	authority ed25519.PublicKey
	revoked   map[string][]revoked // target → when, and by whom
	all       []Revocation         // as received, for persistence and sync
	// verified remembers the chains that verified (their encoding's
	// SHA-256 → until when they stay valid): users sign many jobs and
	// requests with one chain. Emptied by every new revocation.
	verified map[[32]byte]time.Time
	// tickets, when set, is the node's memo of verified ticket
	// signatures (ShareTickets).
	tickets TicketSignatures
	// tokens remembers the request tokens that verified (VerifyToken).
	tokens map[[32]byte]Identity
}

// maxVerifiedChains bounds Book.verified; it starts afresh when full.
const maxVerifiedChains = 4096

// revoked is one revocation's effect: certificates of the target issued
// at or before at, within scope ("" for the authority's: all of them; a
// site for a delegate's: that site's node certificates).
type revoked struct {
	at    time.Time
	scope string
}

// NewBook is a book for the authority's key, with no revocation.
func NewBook(authority ed25519.PublicKey) *Book {
	return &Book{authority: authority, revoked: map[string][]revoked{}}
}

// Authority is the book's authority key.
func (b *Book) Authority() ed25519.PublicKey { return b.authority }

// Clone is an independent copy.
func (b *Book) Clone() *Book {
	c := NewBook(b.authority)
	for k, v := range b.revoked {
		c.revoked[k] = append([]revoked(nil), v...)
	}
	c.all = append([]Revocation(nil), b.all...)
	c.tickets = b.tickets
	return c
}

// Revocations lists the revocations taken, oldest first.
func (b *Book) Revocations() []Revocation { return append([]Revocation(nil), b.all...) }

// Revoke takes a revocation after checking it: its signature, and that
// its issuer may revoke the target (the authority anything, a delegate
// the nodes of its site). It reports whether the revocation is new.
func (b *Book) Revoke(r Revocation, now time.Time) (bool, error) {
	if !r.verifySig() {
		return false, fmt.Errorf("revocation of %s: signature does not verify", clip(r.Target))
	}
	if r.Time.After(now.Add(Skew)) {
		return false, fmt.Errorf("revocation of %s: %w", clip(r.Target), untimely(fmt.Sprintf("dated %v, in the future", r.Time)))
	}
	scope := ""
	if !samePub(r.Issuer, b.authority) {
		if len(r.Chain) == 0 {
			return false, fmt.Errorf("revocation of %s: not signed by this network's authority", clip(r.Target))
		}
		leaf := r.Chain[0]
		if err := b.VerifyChain(r.Chain, now); err != nil {
			return false, fmt.Errorf("revocation of %s: issuer: %w", clip(r.Target), err)
		}
		if leaf.Kind != Delegate || !samePub(leaf.Key, r.Issuer) {
			return false, fmt.Errorf("revocation of %s: the attached chain is not the signer's delegate certificate", clip(r.Target))
		}
		if !isNodeTarget(r.Target) {
			return false, fmt.Errorf("revocation of %s: a delegate may revoke only nodes", clip(r.Target))
		}
		scope = leaf.Site
	}
	for _, x := range b.revoked[r.Target] {
		if x.scope == scope && !x.at.Before(r.Time) {
			return false, nil // known, or covered by a later one
		}
	}
	if len(b.all) >= MaxRevocations {
		return false, fmt.Errorf("revocation of %s: %w", clip(r.Target), untimely(fmt.Sprintf("this node holds %d revocations already", MaxRevocations)))
	}
	b.revoked[r.Target] = append(b.revoked[r.Target], revoked{at: r.Time, scope: scope})
	b.all = append(b.all, r)
	b.verified, b.tokens = nil, nil
	sort.SliceStable(b.all, func(i, j int) bool { return b.all[i].Time.Before(b.all[j].Time) })
	return true, nil
}

// isRevoked reports whether a revocation withdraws c.
func (b *Book) isRevoked(c *Cert) bool {
	for _, x := range b.revoked[targetOf(c)] {
		if c.NotBefore.After(x.at) {
			continue // issued after the revocation
		}
		if x.scope == "" || (c.Kind == Node && c.Site == x.scope) {
			return true
		}
	}
	return false
}

// ErrUntimely is matched (errors.Is) by the refusals that depend on when
// and where a check runs: a certificate revoked, expired or not yet
// valid, a revocation dated ahead of this node's clock or beyond the
// revocations it has room for. Another honest node may accept the same
// bytes a moment earlier (it has not taken the revocation yet, its clock
// differs within Skew), so a peer that relayed them is not to blame.
var ErrUntimely = errors.New("not in force here now")

// untimely is a refusal that matches ErrUntimely.
type untimely string

func (e untimely) Error() string        { return string(e) }
func (e untimely) Is(target error) bool { return target == ErrUntimely }

// VerifyChain checks a chain at now: every signature, every validity
// period, every revocation, each issuer the next certificate's delegate
// key and the last the authority, a delegate's sites, and a user
// certificate issued by the authority itself.
func (b *Book) VerifyChain(ch Chain, now time.Time) error {
	if len(ch) == 0 || len(ch) > MaxChain {
		return fmt.Errorf("chain of %d certificates, want 1 to %d", len(ch), MaxChain)
	}
	digest := sha256.Sum256(ch.Encode())
	if until, ok := b.verified[digest]; ok && !now.After(until) && !now.Add(Skew).Before(chainStart(ch)) {
		return nil
	}
	if err := b.verifyChain(ch, now); err != nil {
		return err
	}
	if b.verified == nil || len(b.verified) >= maxVerifiedChains {
		b.verified = map[[32]byte]time.Time{}
	}
	b.verified[digest] = chainExpiry(ch)
	return nil
}

// chainStart is when the last certificate of a chain to become valid
// does.
func chainStart(ch Chain) time.Time {
	var t time.Time
	for i := range ch {
		if ch[i].NotBefore.After(t) {
			t = ch[i].NotBefore
		}
	}
	return t
}

// verifyChain is VerifyChain without the memory.
func (b *Book) verifyChain(ch Chain, now time.Time) error {
	for i := range ch {
		c := &ch[i]
		if err := c.check(); err != nil {
			return fmt.Errorf("%s: %w", c.ID(), err)
		}
		if i > 0 && c.Kind != Delegate {
			return fmt.Errorf("%s: only a delegate certificate may vouch for another", c.ID())
		}
		last := i == len(ch)-1
		switch {
		case last && !samePub(c.Issuer, b.authority):
			return fmt.Errorf("%s: not issued by this network's authority", c.ID())
		case !last && !samePub(c.Issuer, ch[i+1].Key):
			return fmt.Errorf("%s: not issued by the delegate that follows it", c.ID())
		case !c.verifySig():
			return fmt.Errorf("%s: signature does not verify", c.ID())
		case now.Add(Skew).Before(c.NotBefore):
			return fmt.Errorf("%s: %w", c.ID(), untimely("not valid before "+c.NotBefore.Format(time.RFC3339)))
		case now.After(c.NotAfter):
			return fmt.Errorf("%s: %w", c.ID(), untimely("expired at "+c.NotAfter.Format(time.RFC3339)))
		case b.isRevoked(c):
			return fmt.Errorf("%s: %w", c.ID(), untimely("revoked"))
		}
		if !last {
			d := &ch[i+1]
			switch {
			case c.Kind == User:
				return fmt.Errorf("%s: users are admitted by the authority only", c.ID())
			case c.Site != d.Site:
				return fmt.Errorf("%s: site %q is not the site %q its delegate %s admits to", c.ID(), c.Site, d.Site, d.Subject)
			}
		}
	}
	return nil
}

// NodeIdentity is what a verified node certificate says.
type NodeIdentity struct {
	PeerID   string
	Site     string
	Roles    []string
	NotAfter time.Time
}

// VerifyNode checks that ch admits peer at now.
func (b *Book) VerifyNode(ch Chain, peer string, now time.Time) (NodeIdentity, error) {
	if err := b.VerifyChain(ch, now); err != nil {
		return NodeIdentity{}, err
	}
	leaf := &ch[0]
	switch {
	case leaf.Kind != Node:
		return NodeIdentity{}, fmt.Errorf("%s: not a node certificate", leaf.ID())
	case leaf.Subject != peer:
		return NodeIdentity{}, fmt.Errorf("%s: certifies another peer than %s", leaf.ID(), clip(peer))
	}
	return NodeIdentity{PeerID: peer, Site: leaf.Site, Roles: leaf.Roles, NotAfter: chainExpiry(ch)}, nil
}

// Identity is what a verified user certificate says.
type Identity struct {
	Name     string
	Admin    bool
	Quota    Quota
	Key      ed25519.PublicKey
	NotAfter time.Time
}

// VerifyUser checks ch as a user's chain at now.
func (b *Book) VerifyUser(ch Chain, now time.Time) (Identity, error) {
	if err := b.VerifyChain(ch, now); err != nil {
		return Identity{}, err
	}
	leaf := &ch[0]
	if leaf.Kind != User {
		return Identity{}, fmt.Errorf("%s: not a user certificate", leaf.ID())
	}
	return Identity{Name: leaf.Subject, Admin: leaf.Admin, Quota: leaf.Quota, Key: leaf.Key, NotAfter: chainExpiry(ch)}, nil
}

// chainExpiry is when the first certificate of a chain expires.
func chainExpiry(ch Chain) time.Time {
	t := ch[0].NotAfter
	for i := range ch {
		if ch[i].NotAfter.Before(t) {
			t = ch[i].NotAfter
		}
	}
	return t
}

// Len is how many revocations the book holds: it changes when one is
// taken, so a cache of checks made against the book can tell it is out
// of date.
func (b *Book) Len() int { return len(b.all) }
