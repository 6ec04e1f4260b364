package auth

import (
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Revocation withdraws the certificates of one subject issued up to its
// Time: a node's (Target its peer ID), a user's ("user:NAME") or a
// delegate's ("delegate:NAME"). The authority may revoke anything; a
// delegate only the nodes of its own site, with its chain attached.
type Revocation struct {
	Target string
	Time   time.Time
	Issuer []byte
	// Chain is the issuing delegate's chain; empty when the authority
	// signed.
	Chain Chain
	Sig   []byte
}

const (
	revMagic   = 0xAD
	revVersion = 1
	revDomain  = "agora-revocation-v1\x00"
	// MaxRevocationBytes bounds an encoded revocation.
	MaxRevocationBytes = 5 * maxCertBytes
)

// Target prefixes.
const (
	UserPrefix     = "user:"
	DelegatePrefix = "delegate:"
)

func (r *Revocation) body() []byte {
	w := writer{b: make([]byte, 0, 128)}
	w.byte(revMagic)
	w.uint(revVersion)
	w.str(r.Target)
	w.time(r.Time)
	w.bytes(r.Issuer)
	if len(r.Chain) > 0 {
		w.bool(true)
		w.b = append(w.b, r.Chain.Encode()...)
	} else {
		w.bool(false)
	}
	return w.b
}

// Encode is the revocation's canonical encoding.
func (r *Revocation) Encode() []byte {
	w := writer{b: r.body()}
	w.bytes(r.Sig)
	return w.b
}

// DecodeRevocation reads a revocation and checks its shape.
func DecodeRevocation(data []byte) (Revocation, error) {
	if len(data) > MaxRevocationBytes {
		return Revocation{}, fmt.Errorf("revocation: %d bytes, over the limit of %d", len(data), MaxRevocationBytes)
	}
	rd := reader{b: data}
	var r Revocation
	if m := rd.byte("magic"); rd.err == nil && m != revMagic {
		return Revocation{}, fmt.Errorf("revocation: magic %#x is not %#x", m, revMagic)
	}
	if v := rd.uint("version"); rd.err == nil && v != revVersion {
		return Revocation{}, fmt.Errorf("revocation: version %d, this node reads version %d", v, revVersion)
	}
	r.Target = rd.str("target", maxSubject+len(DelegatePrefix))
	r.Time = rd.time("time")
	r.Issuer = rd.bytes("issuer", ed25519.PublicKeySize)
	if rd.bool("chain present") && rd.err == nil {
		ch, err := readChain(&rd)
		if err != nil {
			return Revocation{}, fmt.Errorf("revocation: %w", err)
		}
		r.Chain = ch
	}
	r.Sig = rd.bytes("signature", ed25519.SignatureSize)
	if err := rd.done("revocation"); err != nil {
		return Revocation{}, fmt.Errorf("revocation: %w", err)
	}
	switch {
	case r.Target == "" || r.Target == UserPrefix || r.Target == DelegatePrefix:
		return Revocation{}, errors.New("revocation: target: missing")
	case r.Time.IsZero():
		return Revocation{}, errors.New("revocation: time: missing")
	case len(r.Issuer) != ed25519.PublicKeySize:
		return Revocation{}, errors.New("revocation: issuer: not an Ed25519 public key")
	case len(r.Sig) != ed25519.SignatureSize:
		return Revocation{}, errors.New("revocation: signature: missing")
	}
	return r, nil
}

// NewRevocation signs a revocation of target at now with key; chain is
// the key's delegate chain, or nil for the authority's key.
func NewRevocation(target string, now time.Time, key ed25519.PrivateKey, chain Chain) (Revocation, error) {
	if target == "" || target == UserPrefix || target == DelegatePrefix {
		return Revocation{}, errors.New("auth: revocation: no target")
	}
	r := Revocation{Target: target, Time: now.UTC().Truncate(time.Second), Issuer: key.Public().(ed25519.PublicKey), Chain: chain}
	r.Sig = ed25519.Sign(key, append([]byte(revDomain), r.body()...))
	return r, nil
}

func (r *Revocation) verifySig() bool {
	return ed25519.Verify(r.Issuer, append([]byte(revDomain), r.body()...), r.Sig)
}

// targetOf is the revocation target that names a certificate's subject.
func targetOf(c *Cert) string {
	switch c.Kind {
	case User:
		return UserPrefix + c.Subject
	case Delegate:
		return DelegatePrefix + c.Subject
	}
	return c.Subject
}

// isNodeTarget reports whether a target names a node.
func isNodeTarget(t string) bool {
	return !strings.HasPrefix(t, UserPrefix) && !strings.HasPrefix(t, DelegatePrefix)
}

// PEM is the revocation as a PEM block.
func (r *Revocation) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemRevocation, Bytes: r.Encode()})
}

// ParseRevocationPEM reads a revocation file's contents.
func ParseRevocationPEM(data []byte) (Revocation, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != pemRevocation {
		return Revocation{}, fmt.Errorf("auth: no %s block", pemRevocation)
	}
	return DecodeRevocation(b.Bytes)
}
