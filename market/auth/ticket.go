package auth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"
)

// Ticket is a signed job submission: the job's spec as the user's client
// parsed it, in canonical form (market/spec Canonical), signed with the
// user's key, with the user's certificate chain. It
// travels with the job (its record, the calls for bids, the awards), so
// that every node that runs a task of it checks who asked for it.
type Ticket struct {
	Spec  []byte
	Time  time.Time
	Nonce []byte
	Chain Chain
	Sig   []byte
}

const (
	ticketMagic   = 0xAE
	ticketVersion = 1
	ticketDomain  = "agora-job-v1\x00"
	// MaxSignedSpecBytes bounds the spec a ticket signs: it travels with
	// the job's calls for bids and awards. A larger job is split.
	MaxSignedSpecBytes = 192 << 10
	// MaxTicketBytes bounds an encoded ticket: the largest spec and a
	// full chain.
	MaxTicketBytes = MaxSignedSpecBytes + (MaxChain+1)*maxCertBytes
	// TicketMaxAge is how long after its signing a ticket may be
	// submitted.
	TicketMaxAge = 10 * time.Minute
)

func (t *Ticket) body() []byte {
	w := writer{b: make([]byte, 0, len(t.Spec)+1024)}
	w.byte(ticketMagic)
	w.uint(ticketVersion)
	w.bytes(t.Spec)
	w.time(t.Time)
	w.bytes(t.Nonce)
	w.b = append(w.b, t.Chain.Encode()...)
	return w.b
}

// Encode is the ticket's canonical encoding.
func (t *Ticket) Encode() []byte {
	w := writer{b: t.body()}
	w.bytes(t.Sig)
	return w.b
}

// DecodeTicket reads a ticket and checks its shape.
func DecodeTicket(data []byte) (Ticket, error) {
	if len(data) > MaxTicketBytes {
		return Ticket{}, fmt.Errorf("ticket: %d bytes, over the limit of %d", len(data), MaxTicketBytes)
	}
	r := reader{b: data}
	var t Ticket
	if m := r.byte("magic"); r.err == nil && m != ticketMagic {
		return Ticket{}, fmt.Errorf("ticket: magic %#x is not %#x", m, ticketMagic)
	}
	if v := r.uint("version"); r.err == nil && v != ticketVersion {
		return Ticket{}, fmt.Errorf("ticket: version %d, this node reads version %d", v, ticketVersion)
	}
	t.Spec = r.bytes("spec", MaxSignedSpecBytes)
	t.Time = r.time("time")
	t.Nonce = r.bytes("nonce", 32)
	if r.err == nil {
		ch, err := readChain(&r)
		if err != nil {
			return Ticket{}, fmt.Errorf("ticket: %w", err)
		}
		t.Chain = ch
	}
	t.Sig = r.bytes("signature", ed25519.SignatureSize)
	if err := r.done("ticket"); err != nil {
		return Ticket{}, fmt.Errorf("ticket: %w", err)
	}
	switch {
	case len(t.Spec) == 0:
		return Ticket{}, errors.New("ticket: spec: missing")
	case t.Time.IsZero():
		return Ticket{}, errors.New("ticket: time: missing")
	case len(t.Sig) != ed25519.SignatureSize:
		return Ticket{}, errors.New("ticket: signature: missing")
	}
	return t, nil
}

// NewTicket signs a job spec as submitted at now by the user of key and
// chain; the nonce comes from rand.
func NewTicket(specText []byte, now time.Time, key ed25519.PrivateKey, chain Chain, rand io.Reader) (Ticket, error) {
	if len(specText) > MaxSignedSpecBytes {
		return Ticket{}, fmt.Errorf("auth: a signed job spec is at most %d KiB; this one is %d KiB: split the job", MaxSignedSpecBytes>>10, len(specText)>>10)
	}
	t := Ticket{Spec: specText, Time: now.UTC().Truncate(time.Second), Nonce: make([]byte, 16), Chain: chain}
	if _, err := io.ReadFull(rand, t.Nonce); err != nil {
		return Ticket{}, fmt.Errorf("auth: nonce: %w", err)
	}
	t.Sig = ed25519.Sign(key, append([]byte(ticketDomain), t.body()...))
	return t, nil
}

// JobID is the ID of the job a ticket submits, derived from its
// signature: the same ticket names the same job wherever it is
// submitted, and no one can choose another's job ID.
func (t *Ticket) JobID() string {
	sum := sha256.Sum256(t.Sig)
	return "j-" + hex.EncodeToString(sum[:8])
}

// VerifyTicket checks a ticket's chain and signature at now and returns
// the user who signed it. It does not check the ticket's age: a job's
// tickets are checked long after submission; Submit does (TicketMaxAge).
func (b *Book) VerifyTicket(t *Ticket, now time.Time) (Identity, error) {
	id, err := b.VerifyUser(t.Chain, now)
	if err != nil {
		return Identity{}, fmt.Errorf("job ticket: %w", err)
	}
	if !b.verifySignature(t) {
		return Identity{}, fmt.Errorf("job ticket of %s: signature does not verify", id.Name)
	}
	if t.Time.After(now.Add(Skew)) {
		return Identity{}, fmt.Errorf("job ticket of %s: signed at %s, in the future", id.Name, t.Time.Format(time.RFC3339))
	}
	return id, nil
}

// TicketSignatures checks ticket signatures for a Book, perhaps
// remembering those that verified: a node shares one memo among its
// Books and the goroutines that check tickets ahead of its loop (the
// memo, with its lock, is the node's). Whether a signature verifies does
// not change with revocations: a Book checks the chain, against its own
// revocations, every time.
type TicketSignatures interface {
	Verify(t *Ticket) bool
}

// VerifyTicketSignature reports whether t's signature verifies under the
// key of the first certificate of its chain. It says nothing of the
// chain: Book.VerifyTicket does.
func VerifyTicketSignature(t *Ticket) bool {
	if len(t.Chain) == 0 || len(t.Chain[0].Key) != ed25519.PublicKeySize {
		return false
	}
	return ed25519.Verify(t.Chain[0].Key, append([]byte(ticketDomain), t.body()...), t.Sig)
}

// TicketSignatureKey is what a memo of verified ticket signatures keys a
// signature by: the hash of what was signed and the signature.
func TicketSignatureKey(t *Ticket) [32]byte {
	return sha256.Sum256(append(append([]byte(ticketDomain), t.body()...), t.Sig...))
}

func (b *Book) verifySignature(t *Ticket) bool {
	if b.tickets != nil {
		return b.tickets.Verify(t)
	}
	return VerifyTicketSignature(t)
}

// ShareTickets makes b remember the ticket signatures it verifies in tm,
// and take those verified by anyone sharing it.
func (b *Book) ShareTickets(tm TicketSignatures) { b.tickets = tm }

// Tickets is the memo b shares, or nil.
func (b *Book) Tickets() TicketSignatures { return b.tickets }

// CheckFresh refuses a ticket signed longer than TicketMaxAge before now:
// a node accepts a submission only while it is fresh, so that a ticket
// seen in a job record cannot be submitted again much later.
func (t *Ticket) CheckFresh(now time.Time) error {
	if now.Sub(t.Time) > TicketMaxAge {
		return fmt.Errorf("job ticket signed at %s, more than %v ago: sign the job again", t.Time.Format(time.RFC3339), TicketMaxAge)
	}
	return nil
}

// A job record holds its spec; its ticket signs the same bytes (the
// spec's canonical form), so a record stores the ticket without them.

// DetachSpec splits an encoded ticket into its encoding with an empty
// spec and the spec.
func DetachSpec(raw []byte) (detached, spec []byte, err error) {
	head, spec, rest, err := splitTicket(raw)
	if err != nil {
		return nil, nil, err
	}
	detached = append(append(append(make([]byte, 0, len(head)+1+len(rest)), head...), 0), rest...)
	return detached, spec, nil
}

// AttachSpec puts spec back into a ticket DetachSpec detached.
func AttachSpec(detached, spec []byte) ([]byte, error) {
	head, empty, rest, err := splitTicket(detached)
	if err != nil {
		return nil, err
	}
	if len(empty) != 0 {
		return nil, errors.New("ticket: spec not detached")
	}
	out := make([]byte, 0, len(head)+binary.MaxVarintLen64+len(spec)+len(rest))
	out = append(out, head...)
	out = binary.AppendUvarint(out, uint64(len(spec)))
	out = append(out, spec...)
	return append(out, rest...), nil
}

// splitTicket finds an encoded ticket's spec field: what comes before
// its length, its bytes, and what follows them.
func splitTicket(raw []byte) (head, spec, rest []byte, err error) {
	if len(raw) == 0 || raw[0] != ticketMagic {
		return nil, nil, nil, errors.New("ticket: not a ticket")
	}
	v, n := binary.Uvarint(raw[1:])
	if n <= 0 || v != ticketVersion {
		return nil, nil, nil, fmt.Errorf("ticket: version %d, this node reads version %d", v, ticketVersion)
	}
	at := 1 + n
	l, m := binary.Uvarint(raw[at:])
	if m <= 0 || l > uint64(len(raw)-at-m) {
		return nil, nil, nil, errors.New("ticket: spec: truncated")
	}
	return raw[:at], raw[at+m : at+m+int(l)], raw[at+m+int(l):], nil
}

// SplitTicket finds an encoded ticket's spec field: what comes before
// its length, its bytes, and what follows them. The ticket without its
// spec is head, a zero byte, rest (DetachSpec).
func SplitTicket(raw []byte) (head, spec, rest []byte, err error) { return splitTicket(raw) }
