package market

import (
	"crypto/sha256"
	"sync"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// TicketChecks holds the parts of a ticket's check that depend on its
// bytes alone: its signature under its own chain's first key
// (auth.TicketMemo) and its spec's parse. A node runs them on the
// goroutine that received a ticket (Prepare, PrepareSubmission), before
// the market's turn; the market's own check, which still decides (the
// chain against its authority and revocations, the quota, what a call
// for bids asks), then finds them done instead of running them in its
// one loop. Safe for concurrent use.
type TicketChecks struct {
	sigs  *auth.TicketMemo
	mu    sync.Mutex
	specs map[[32]byte]parsedSpec // SHA-256 of the spec's bytes
}

// parsedSpec is a signed spec as read. The job is shared: read only.
type parsedSpec struct {
	job       *spec.Job
	canonical bool // read by spec.FromCanonical: canonical and valid
}

// maxParsedSpecs bounds TicketChecks.specs; it starts afresh when full.
const maxParsedSpecs = 1024

// NewTicketChecks is an empty set of checks.
func NewTicketChecks() *TicketChecks {
	return &TicketChecks{sigs: auth.NewTicketMemo(), specs: map[[32]byte]parsedSpec{}}
}

// Signatures is the memo of verified ticket signatures, for the node's
// other Books to share (auth.Book.ShareTickets).
func (c *TicketChecks) Signatures() *auth.TicketMemo { return c.sigs }

// Prepare runs the byte-only checks of a ticket a peer sent: its
// signature and its spec's parse. What fails is left for the market to
// refuse with its reason. Nothing to do for a nil ticket or TicketChecks.
func (c *TicketChecks) Prepare(raw []byte) { c.prepare(raw, false) }

// PrepareSubmission is Prepare for a ticket submitted here: its spec is
// also checked for canonical form and validity (spec.FromCanonical).
func (c *TicketChecks) PrepareSubmission(raw []byte) { c.prepare(raw, true) }

func (c *TicketChecks) prepare(raw []byte, canonical bool) {
	if c == nil || len(raw) == 0 {
		return
	}
	t, err := auth.DecodeTicket(raw)
	if err != nil || !c.sigs.Verify(&t) {
		return
	}
	_, _ = c.spec(t.Spec, canonical)
}

// spec reads a signed spec, canonical or not (FromCanonical, FromSigned),
// or returns the job read before.
func (c *TicketChecks) spec(b []byte, canonical bool) (*spec.Job, error) {
	key := sha256.Sum256(b)
	c.mu.Lock()
	p, ok := c.specs[key]
	c.mu.Unlock()
	if ok && (p.canonical || !canonical) {
		return p.job, nil
	}
	read := spec.FromSigned
	if canonical {
		read = spec.FromCanonical
	}
	js, err := read(b)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.specs) >= maxParsedSpecs {
		clear(c.specs)
	}
	c.specs[key] = parsedSpec{job: js, canonical: canonical}
	c.mu.Unlock()
	return js, nil
}

// TicketOf is the job ticket a message carries (a call for bids, an
// award, a hold), or nil.
func TicketOf(msg Msg) []byte {
	switch x := msg.(type) {
	case CFP:
		return x.Ticket
	case Award:
		return x.Ticket
	case Hold:
		return x.Ticket
	}
	return nil
}
