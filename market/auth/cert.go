package auth

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"
)

// Kind is what a certificate certifies.
type Kind uint8

// Certificate kinds.
const (
	// Node admits a node: Subject is its peer ID.
	Node Kind = 1
	// User names a user: Subject is the name, Key the user's key.
	User Kind = 2
	// Delegate lets a site admin admit nodes for Site: Subject is the
	// delegate's name, Key the key it signs with.
	Delegate Kind = 3
)

func (k Kind) String() string {
	switch k {
	case Node:
		return "node"
	case User:
		return "user"
	case Delegate:
		return "delegate"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Limits of a certificate's fields.
const (
	maxSubject = 128
	maxSite    = 64
	maxRoles   = 16
	maxRole    = 32
	maxSites   = 32
	// MaxChain is the most certificates a chain may hold: a leaf and up
	// to three delegates.
	MaxChain = 4
	// maxCertBytes bounds one encoded certificate.
	maxCertBytes = 4096
)

// Unlimited marks a quota without a limit.
const Unlimited = -1

// Quota bounds what a user's jobs may ask for: each task replica's CPU
// (millicores) and GPUs, a job's priority, and the sites its tasks may
// run at. Unlimited (or, for Sites, empty) sets no bound.
type Quota struct {
	MaxCPU      int64
	MaxGPU      int
	MaxPriority int
	Sites       []string
	// MaxRunningCPU (millicores), MaxRunningGPU and MaxRunningJobs bound
	// what the user's jobs run at once across the whole network: the
	// replicas awarded or running, and the jobs with any (market
	// userlimits.go). Version 1 certificates carry none: Unlimited.
	MaxRunningCPU  int64
	MaxRunningGPU  int
	MaxRunningJobs int
	// Share is the user's fair share (docs/scheduling.md, "Fair share"):
	// relative to the other users', 1 to MaxShare. Certificates before
	// version 3 carry none: 1.
	Share int
}

// MaxShare bounds a user's fair share.
const MaxShare = 1 << 20

// NoQuota is a quota without limits.
var NoQuota = Quota{MaxCPU: Unlimited, MaxGPU: Unlimited, MaxPriority: Unlimited,
	MaxRunningCPU: Unlimited, MaxRunningGPU: Unlimited, MaxRunningJobs: Unlimited, Share: 1}

// Running says whether q bounds the user's running work at all.
func (q Quota) Running() bool {
	return q.MaxRunningCPU != Unlimited || q.MaxRunningGPU != Unlimited || q.MaxRunningJobs != Unlimited
}

// Cert is a certificate: what its issuer vouches for about its subject
// between NotBefore and NotAfter.
type Cert struct {
	Kind    Kind
	Subject string
	// Key is a user's or delegate's public key; empty for a node, whose
	// peer ID is its key.
	Key []byte
	// Site is a node's site, or the site a delegate may admit nodes to.
	Site string
	// Roles are a node's roles (informative today).
	Roles []string
	// Admin makes a user an administrator: it may cancel, read and
	// inspect every user's jobs.
	Admin     bool
	Quota     Quota
	NotBefore time.Time
	NotAfter  time.Time
	// Serial tells apart two certificates of one subject.
	Serial []byte
	// Issuer is the key that signed it: the authority's or a delegate's.
	Issuer []byte
	Sig    []byte
	// version is the encoding the certificate was read in (0: this
	// build's, certVersion): its signature is over that encoding.
	version uint64
}

const (
	certMagic   = 0xAC
	certVersion = 3 // 2 added the running limits, 3 the share; 1 and 2 still read
	certDomain  = "agora-cert-v1\x00"
)

// body is the signed part of the encoding.
func (c *Cert) body() []byte {
	w := writer{b: make([]byte, 0, 256)}
	v := c.version
	if v == 0 {
		v = certVersion
	}
	w.byte(certMagic)
	w.uint(v)
	w.byte(byte(c.Kind))
	w.str(c.Subject)
	w.bytes(c.Key)
	w.str(c.Site)
	w.strs(c.Roles)
	w.bool(c.Admin)
	w.int(c.Quota.MaxCPU)
	w.int(int64(c.Quota.MaxGPU))
	w.int(int64(c.Quota.MaxPriority))
	w.strs(c.Quota.Sites)
	if v >= 2 {
		w.int(c.Quota.MaxRunningCPU)
		w.int(int64(c.Quota.MaxRunningGPU))
		w.int(int64(c.Quota.MaxRunningJobs))
	}
	if v >= 3 {
		w.int(int64(c.Quota.Share))
	}
	w.time(c.NotBefore)
	w.time(c.NotAfter)
	w.bytes(c.Serial)
	w.bytes(c.Issuer)
	return w.b
}

// Encode is the certificate's canonical encoding: its body, then the
// signature.
func (c *Cert) Encode() []byte {
	w := writer{b: c.body()}
	w.bytes(c.Sig)
	return w.b
}

// ID names the certificate in logs: its kind, subject and serial.
func (c *Cert) ID() string {
	return fmt.Sprintf("%s %s #%s", c.Kind, c.Subject, hex.EncodeToString(c.Serial))
}

// DecodeCert reads a certificate and checks its shape (not its
// signature or validity: Book does).
func DecodeCert(data []byte) (Cert, error) {
	if len(data) > maxCertBytes {
		return Cert{}, fmt.Errorf("certificate: %d bytes, over the limit of %d", len(data), maxCertBytes)
	}
	r := reader{b: data}
	var c Cert
	if m := r.byte("magic"); r.err == nil && m != certMagic {
		return Cert{}, fmt.Errorf("certificate: magic %#x is not %#x", m, certMagic)
	}
	v := r.uint("version")
	if r.err == nil && (v < 1 || v > certVersion) {
		return Cert{}, fmt.Errorf("certificate: version %d, this node reads versions 1 to %d", v, certVersion)
	}
	c.Kind = Kind(r.byte("kind"))
	c.Subject = r.str("subject", maxSubject)
	c.Key = r.bytes("key", ed25519.PublicKeySize)
	c.Site = r.str("site", maxSite)
	c.Roles = r.strs("roles", maxRoles, maxRole)
	c.Admin = r.bool("admin")
	c.Quota.MaxCPU = r.int("quota.max_cpu")
	c.Quota.MaxGPU = int(r.int("quota.max_gpu"))
	c.Quota.MaxPriority = int(r.int("quota.max_priority"))
	c.Quota.Sites = r.strs("quota.sites", maxSites, maxSite)
	c.Quota.MaxRunningCPU, c.Quota.MaxRunningGPU, c.Quota.MaxRunningJobs = Unlimited, Unlimited, Unlimited
	c.version = v
	if v >= 2 {
		c.Quota.MaxRunningCPU = r.int("quota.max_running_cpu")
		c.Quota.MaxRunningGPU = int(r.int("quota.max_running_gpu"))
		c.Quota.MaxRunningJobs = int(r.int("quota.max_running_jobs"))
	}
	c.Quota.Share = 1
	if v >= 3 {
		c.Quota.Share = int(r.int("quota.share"))
	}
	c.NotBefore = r.time("not_before")
	c.NotAfter = r.time("not_after")
	c.Serial = r.bytes("serial", 32)
	c.Issuer = r.bytes("issuer", ed25519.PublicKeySize)
	c.Sig = r.bytes("signature", ed25519.SignatureSize)
	if err := r.done("certificate"); err != nil {
		return Cert{}, fmt.Errorf("certificate: %w", err)
	}
	if err := c.check(); err != nil {
		return Cert{}, fmt.Errorf("certificate %s: %w", clip(c.Subject), err)
	}
	return c, nil
}

// check validates the certificate's shape.
func (c *Cert) check() error {
	switch {
	case c.Kind != Node && c.Kind != User && c.Kind != Delegate:
		return fmt.Errorf("unknown kind %d", c.Kind)
	case c.Subject == "":
		return errors.New("subject: missing")
	case c.Kind == Node && len(c.Key) != 0:
		return errors.New("key: a node certificate names its key by the peer ID")
	case c.Kind != Node && len(c.Key) != ed25519.PublicKeySize:
		return fmt.Errorf("key: %d bytes, want %d", len(c.Key), ed25519.PublicKeySize)
	case c.Kind == Delegate && c.Site == "":
		return errors.New("site: a delegate certificate must name the site it admits nodes to")
	case c.NotBefore.IsZero() || !c.NotAfter.After(c.NotBefore):
		return errors.New("validity: not_after must follow not_before")
	case len(c.Issuer) != ed25519.PublicKeySize:
		return errors.New("issuer: not an Ed25519 public key")
	case len(c.Sig) != ed25519.SignatureSize:
		return errors.New("signature: missing")
	case c.Kind == User && (c.Quota.Share < 1 || c.Quota.Share > MaxShare):
		return fmt.Errorf("quota.share: %d, want 1 to %d", c.Quota.Share, MaxShare)
	}
	return nil
}

// Sign sets c's issuer and serial and signs it with the issuer's key;
// serial comes from rand.
func (c *Cert) Sign(issuer ed25519.PrivateKey, rand io.Reader) error {
	c.Issuer = issuer.Public().(ed25519.PublicKey)
	if c.Kind == User && c.Quota.Share == 0 {
		c.Quota.Share = 1 // no share named: the default
	}
	c.Serial = make([]byte, 16)
	if _, err := io.ReadFull(rand, c.Serial); err != nil {
		return fmt.Errorf("auth: serial: %w", err)
	}
	c.Sig = make([]byte, ed25519.SignatureSize) // the body's shape check wants one
	if err := c.check(); err != nil {
		return fmt.Errorf("auth: certificate %s: %w", c.Subject, err)
	}
	c.Sig = ed25519.Sign(issuer, append([]byte(certDomain), c.body()...))
	return nil
}

// verifySig checks the certificate's signature by its issuer.
func (c *Cert) verifySig() bool {
	return len(c.Issuer) == ed25519.PublicKeySize &&
		ed25519.Verify(c.Issuer, append([]byte(certDomain), c.body()...), c.Sig)
}

// Chain is a certificate and the delegate certificates that vouch for
// its issuer, leaf first; the last one's issuer is the authority.
type Chain []Cert

// Encode is the chain's canonical encoding: a count, then each
// certificate's encoding, length-prefixed.
func (ch Chain) Encode() []byte {
	w := writer{}
	w.uint(uint64(len(ch)))
	for i := range ch {
		w.bytes(ch[i].Encode())
	}
	return w.b
}

// DecodeChain reads a chain.
func DecodeChain(data []byte) (Chain, error) {
	r := reader{b: data}
	ch, err := readChain(&r)
	if err == nil {
		err = r.done("chain")
	}
	return ch, err
}

func readChain(r *reader) (Chain, error) {
	n := r.uint("chain length")
	if r.err != nil {
		return nil, r.err
	}
	if n == 0 || n > MaxChain {
		return nil, fmt.Errorf("chain: %d certificates, want 1 to %d", n, MaxChain)
	}
	ch := make(Chain, n)
	for i := range ch {
		b := r.bytes(fmt.Sprintf("chain[%d]", i), maxCertBytes)
		if r.err != nil {
			return nil, r.err
		}
		c, err := DecodeCert(b)
		if err != nil {
			return nil, fmt.Errorf("chain[%d]: %w", i, err)
		}
		ch[i] = c
	}
	return ch, nil
}

// PEM is the chain as PEM blocks, leaf first.
func (ch Chain) PEM() []byte {
	var out []byte
	for i := range ch {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: pemCert, Bytes: ch[i].Encode()})...)
	}
	return out
}

// ParseChainPEM reads the chain of certificate blocks in a file's
// contents (other blocks, such as a key, are skipped).
func ParseChainPEM(data []byte) (Chain, error) {
	var ch Chain
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != pemCert {
			continue
		}
		c, err := DecodeCert(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("auth: certificate %d: %w", len(ch)+1, err)
		}
		ch = append(ch, c)
	}
	switch {
	case len(ch) == 0:
		return nil, errors.New("auth: no certificate in the file")
	case len(ch) > MaxChain:
		return nil, fmt.Errorf("auth: %d certificates, at most %d", len(ch), MaxChain)
	}
	return ch, nil
}
