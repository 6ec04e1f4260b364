package auth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Action is what a signed request asks to do.
type Action string

// Actions a token may name.
const (
	ActStatus Action = "status" // a job's detail
	ActSpec   Action = "spec"   // a job's spec
	ActLogs   Action = "logs"   // a job's output
	ActCancel Action = "cancel" // cancel a job
	ActJobs   Action = "jobs"   // list jobs
	ActDrain  Action = "drain"  // drain a node
	// ActUndrain ends a drain: its own action, so that a drain's token
	// cannot be replayed to undo it.
	ActUndrain Action = "undrain"
	ActPeers   Action = "peers" // read a node's peers and resources
	// ActSession signs a user into the dashboard of the node its Job
	// names: it stands for the user's reads (Reads) for SessionTTL.
	ActSession Action = "session"
)

// SessionTTL is how long a dashboard session lasts after the user
// signed it.
const SessionTTL = 12 * time.Hour

// Reads says whether act only reads: what a dashboard session may do.
func Reads(act Action) bool {
	switch act {
	case ActStatus, ActSpec, ActLogs, ActJobs, ActPeers, ActSession:
		return true
	}
	return false
}

// Token is a signed request: a user asks a node to do Action (on Job),
// at Time. A node takes it within Skew of its own clock.
type Token struct {
	Action Action
	Job    string
	Time   time.Time
	Nonce  []byte
	Chain  Chain
	Sig    []byte
}

const (
	tokenMagic   = 0xAF
	tokenVersion = 1
	tokenDomain  = "agora-request-v1\x00"
	// MaxTokenBytes bounds an encoded token.
	MaxTokenBytes = (MaxChain + 1) * maxCertBytes
)

func (t *Token) body() []byte {
	w := writer{b: make([]byte, 0, 512)}
	w.byte(tokenMagic)
	w.uint(tokenVersion)
	w.str(string(t.Action))
	w.str(t.Job)
	w.time(t.Time)
	w.bytes(t.Nonce)
	w.b = append(w.b, t.Chain.Encode()...)
	return w.b
}

// Encode is the token's canonical encoding.
func (t *Token) Encode() []byte {
	w := writer{b: t.body()}
	w.bytes(t.Sig)
	return w.b
}

// Text is the token as an HTTP header value (base64url).
func (t *Token) Text() string { return base64.RawURLEncoding.EncodeToString(t.Encode()) }

// DecodeToken reads a token and checks its shape.
func DecodeToken(data []byte) (Token, error) {
	if len(data) > MaxTokenBytes {
		return Token{}, fmt.Errorf("request credential: %d bytes, over the limit of %d", len(data), MaxTokenBytes)
	}
	r := reader{b: data}
	var t Token
	if m := r.byte("magic"); r.err == nil && m != tokenMagic {
		return Token{}, fmt.Errorf("request credential: magic %#x is not %#x", m, tokenMagic)
	}
	if v := r.uint("version"); r.err == nil && v != tokenVersion {
		return Token{}, fmt.Errorf("request credential: version %d, this node reads version %d", v, tokenVersion)
	}
	t.Action = Action(r.str("action", 32))
	t.Job = r.str("job", maxSubject)
	t.Time = r.time("time")
	t.Nonce = r.bytes("nonce", 32)
	if r.err == nil {
		ch, err := readChain(&r)
		if err != nil {
			return Token{}, fmt.Errorf("request credential: %w", err)
		}
		t.Chain = ch
	}
	t.Sig = r.bytes("signature", ed25519.SignatureSize)
	if err := r.done("request credential"); err != nil {
		return Token{}, fmt.Errorf("request credential: %w", err)
	}
	if t.Action == "" || t.Time.IsZero() || len(t.Sig) != ed25519.SignatureSize {
		return Token{}, errors.New("request credential: action, time or signature missing")
	}
	return t, nil
}

// VerifySession checks t as a sign-in to node's dashboard at now: a
// session token for that node, signed within Skew of now.
func (b *Book) VerifySession(t *Token, node string, now time.Time) (Identity, error) {
	switch {
	case t.Action != ActSession:
		return Identity{}, fmt.Errorf("a %s credential is not a dashboard sign-in", t.Action)
	case t.Job != node:
		return Identity{}, fmt.Errorf("dashboard sign-in for node %q presented to %q", clip(t.Job), clip(node))
	case now.Sub(t.Time) > Skew || t.Time.Sub(now) > Skew:
		return Identity{}, fmt.Errorf("dashboard sign-in signed at %s, more than %v from this node's clock", t.Time.Format(time.RFC3339), Skew)
	}
	return b.VerifyToken(t, node, now, ActSession)
}

// ParseTokenText reads a token from its header text.
func ParseTokenText(s string) (Token, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Token{}, errors.New("request credential: not base64url")
	}
	return DecodeToken(b)
}

// NewToken signs a request for act on job at now.
func NewToken(act Action, job string, now time.Time, key ed25519.PrivateKey, chain Chain, rand io.Reader) (Token, error) {
	t := Token{Action: act, Job: job, Time: now.UTC().Truncate(time.Second), Nonce: make([]byte, 16), Chain: chain}
	if _, err := io.ReadFull(rand, t.Nonce); err != nil {
		return Token{}, fmt.Errorf("auth: nonce: %w", err)
	}
	t.Sig = ed25519.Sign(key, append([]byte(tokenDomain), t.body()...))
	return t, nil
}

// VerifyToken checks that t is a request about job (one of acts, when
// any are given), fresh at now, and signed by the user its chain names,
// and returns that user.
func (b *Book) VerifyToken(t *Token, job string, now time.Time, acts ...Action) (Identity, error) {
	if t.Action == ActSession {
		// A dashboard session reads as its user, of any job, until it
		// lapses; its Job names the node it was signed for, which the
		// sign-in checks (VerifySession).
		for _, a := range acts {
			if !Reads(a) {
				return Identity{}, fmt.Errorf("a dashboard session only reads: it may not %s", a)
			}
		}
		if d := now.Sub(t.Time); d > SessionTTL || d < -Skew {
			return Identity{}, fmt.Errorf("dashboard session signed at %s: lapsed (sessions last %v)", t.Time.Format(time.RFC3339), SessionTTL)
		}
	} else {
		if t.Job != job || (len(acts) > 0 && !slices.Contains(acts, t.Action)) {
			return Identity{}, fmt.Errorf("request credential for %s %q used for %v %q", t.Action, clip(t.Job), acts, clip(job))
		}
		if d := now.Sub(t.Time); d > Skew || d < -Skew {
			return Identity{}, fmt.Errorf("request credential signed at %s, more than %v from this node's clock", t.Time.Format(time.RFC3339), Skew)
		}
	}
	// A client polling a job signs one token and sends it again while it
	// is fresh: its signature is checked once.
	key := sha256.Sum256(append(t.body(), t.Sig...))
	if id, ok := b.tokens[key]; ok && now.Before(id.NotAfter) {
		return id, nil
	}
	id, err := b.VerifyUser(t.Chain, now)
	if err != nil {
		return Identity{}, fmt.Errorf("request credential: %w", err)
	}
	if !ed25519.Verify(id.Key, append([]byte(tokenDomain), t.body()...), t.Sig) {
		return Identity{}, fmt.Errorf("request credential of %s: signature does not verify", id.Name)
	}
	if b.tokens == nil || len(b.tokens) >= maxVerifiedChains {
		b.tokens = map[[32]byte]Identity{}
	}
	b.tokens[key] = id
	return id, nil
}
