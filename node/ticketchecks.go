package node

import (
	"crypto/sha256"
	"sync"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// ticketChecks holds the parts of a ticket's check that depend on its
// bytes alone: its signature under its own chain's first key and its
// spec's parse. The node runs them on the goroutine that received a
// ticket (Prepare, PrepareSubmission), before the market's turn; the
// market's own check, which still decides (the chain against its
// authority and revocations, the quota, what a call for bids asks), then
// finds them done instead of running them in its one loop. It is the
// market's market.TicketReader and every Book's auth.TicketSignatures.
// Safe for concurrent use: the lock the pure core must not hold.
type ticketChecks struct {
	mu    sync.Mutex
	sigs  map[[32]byte]struct{}   // auth.TicketSignatureKey of the signatures that verified
	specs map[[32]byte]parsedSpec // SHA-256 of the spec's bytes
}

// parsedSpec is a signed spec as read. The job is shared: read only.
type parsedSpec struct {
	job       *spec.Job
	canonical bool // read by spec.FromCanonical: canonical and valid
}

// Bounds of ticketChecks; each map starts afresh when full.
const (
	maxMemoTickets = 4096
	maxParsedSpecs = 1024
)

var (
	_ market.TicketReader   = (*ticketChecks)(nil)
	_ auth.TicketSignatures = (*ticketChecks)(nil)
)

func newTicketChecks() *ticketChecks {
	return &ticketChecks{sigs: map[[32]byte]struct{}{}, specs: map[[32]byte]parsedSpec{}}
}

// Signatures is the memo of verified ticket signatures the market's Book
// shares (market.TicketReader).
func (c *ticketChecks) Signatures() auth.TicketSignatures { return c }

// Verify reports whether t's signature verifies, remembering it if so.
func (c *ticketChecks) Verify(t *auth.Ticket) bool {
	key := auth.TicketSignatureKey(t)
	c.mu.Lock()
	_, ok := c.sigs[key]
	c.mu.Unlock()
	if ok {
		return true
	}
	if !auth.VerifyTicketSignature(t) {
		return false
	}
	c.mu.Lock()
	if len(c.sigs) >= maxMemoTickets {
		clear(c.sigs)
	}
	c.sigs[key] = struct{}{}
	c.mu.Unlock()
	return true
}

// Prepare runs the byte-only checks of a ticket a peer sent: its
// signature and its spec's parse. What fails is left for the market to
// refuse with its reason. Nothing to do for a nil ticket or ticketChecks.
func (c *ticketChecks) Prepare(raw []byte) { c.prepare(raw, false) }

// PrepareSubmission is Prepare for a ticket submitted here: its spec is
// also checked for canonical form and validity (spec.FromCanonical).
func (c *ticketChecks) PrepareSubmission(raw []byte) { c.prepare(raw, true) }

func (c *ticketChecks) prepare(raw []byte, canonical bool) {
	if c == nil || len(raw) == 0 {
		return
	}
	t, err := auth.DecodeTicket(raw)
	if err != nil || !c.Verify(&t) {
		return
	}
	_, _ = c.Spec(t.Spec, canonical)
}

// Spec reads a signed spec, canonical or not, or returns the job read
// before (market.TicketReader).
func (c *ticketChecks) Spec(b []byte, canonical bool) (*spec.Job, error) {
	key := sha256.Sum256(b)
	c.mu.Lock()
	p, ok := c.specs[key]
	c.mu.Unlock()
	if ok && (p.canonical || !canonical) {
		return p.job, nil
	}
	js, err := market.ReadSignedSpec(b, canonical)
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
