package auth

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"strings"
)

// PEM block types of the files the CLI writes.
const (
	pemAuthorityKey = "AGORA AUTHORITY KEY"
	pemUserKey      = "AGORA USER KEY"
	pemDelegateKey  = "AGORA DELEGATE KEY"
	pemCert         = "AGORA CERTIFICATE"
	pemRevocation   = "AGORA REVOCATION"
)

// authorityPrefix starts the text form of an authority's public key.
const authorityPrefix = "agora-authority:"

// NewKey draws an Ed25519 key pair from rand (crypto/rand.Reader outside
// tests).
func NewKey(rand io.Reader) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("auth: new key: %w", err)
	}
	return priv, nil
}

// AuthorityText is the text form of an authority's public key, its ID:
// what authority.pub holds and `agora node --trust` accepts.
func AuthorityText(pub ed25519.PublicKey) string {
	return authorityPrefix + base64.RawURLEncoding.EncodeToString(pub)
}

// ParseAuthority reads an authority's public key from its text form.
func ParseAuthority(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, authorityPrefix)
	if !ok {
		return nil, fmt.Errorf("authority key %q: does not start with %q", clip(s), authorityPrefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("authority key %q: not a base64url Ed25519 public key", clip(s))
	}
	return ed25519.PublicKey(b), nil
}

// KeyKind names what a private key file holds.
type KeyKind string

// Private key kinds.
const (
	AuthorityKey KeyKind = pemAuthorityKey
	UserKey      KeyKind = pemUserKey
	DelegateKey  KeyKind = pemDelegateKey
)

// EncodeKey is the PEM block of a private key (its 32-byte seed).
func EncodeKey(kind KeyKind, priv ed25519.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: string(kind), Bytes: priv.Seed()})
}

// findKey returns the private key of the first block of kind in data.
func findKey(data []byte, kind KeyKind) (ed25519.PrivateKey, error) {
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("no %s block", kind)
		}
		if b.Type != string(kind) {
			continue
		}
		if len(b.Bytes) != ed25519.SeedSize {
			return nil, fmt.Errorf("%s: %d bytes, want a %d-byte seed", kind, len(b.Bytes), ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(b.Bytes), nil
	}
}

// ParseKey reads the private key of kind from a PEM file's contents.
func ParseKey(data []byte, kind KeyKind) (ed25519.PrivateKey, error) {
	k, err := findKey(data, kind)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return k, nil
}

// samePub reports whether two public keys are the same.
func samePub(a, b []byte) bool { return len(a) == ed25519.PublicKeySize && bytes.Equal(a, b) }

// clip shortens untrusted text quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
