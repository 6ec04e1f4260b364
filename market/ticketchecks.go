package market

import (
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// TicketReader is what a node checked of tickets ahead of the market, on
// the goroutines that received them, and whatever it remembers of them:
// the signatures that verified and the specs read. The market's own
// check still decides (the chain against its authority and revocations,
// the quota, what a call for bids asks); it only finds that work done.
// The node's implementation holds a lock; the market calls it from its
// one goroutine.
type TicketReader interface {
	// Signatures is the memo the market's Book shares (nil: none).
	Signatures() auth.TicketSignatures
	// Spec reads a signed spec (canonical: spec.FromCanonical, as the
	// node a job is submitted to reads it) or returns one read before.
	Spec(b []byte, canonical bool) (*spec.Job, error)
}

// ReadSignedSpec reads the spec a ticket signs: canonical and valid
// (spec.FromCanonical) for a submission, as signed (spec.FromSigned)
// otherwise.
func ReadSignedSpec(b []byte, canonical bool) (*spec.Job, error) {
	if canonical {
		return spec.FromCanonical(b)
	}
	return spec.FromSigned(b)
}

// readTickets is the TicketReader of a market given none: it remembers
// nothing.
type readTickets struct{}

func (readTickets) Signatures() auth.TicketSignatures { return nil }
func (readTickets) Spec(b []byte, canonical bool) (*spec.Job, error) {
	return ReadSignedSpec(b, canonical)
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
