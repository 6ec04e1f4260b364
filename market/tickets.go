package market

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// tickets is what a node knows of job tickets in a network with an
// authority: the authority and the revocations taken (book), what the
// node's goroutines checked ahead (checks), the tickets its contractor
// checked, and the peers its manager gave each job's ticket. book is nil
// in an open network.
type tickets struct {
	*shared
	con *contractor

	self   NodeID
	book   *auth.Book
	checks TicketReader
	ticketCache
}

// ticketCacheSize bounds the jobs whose checked ticket a contractor
// keeps; an evicted one is asked for again (NoBid.NeedTicket).
const ticketCacheSize = 1024

// ticketCache is a contractor's checked tickets and a manager's record
// of which peers it gave each job's ticket.
type ticketCache struct {
	byJob map[string]*ticketInfo
	order []string // insertion order, for eviction
	sent  map[string]map[NodeID]bool
}

// ticketInfo is a checked ticket.
type ticketInfo struct {
	digest [32]byte
	raw    []byte
	ticket auth.Ticket
	user   auth.Identity
	spec   *spec.Job
}

// errNeedTicket is a job whose ticket this node does not hold.
var errNeedTicket = errors.New("no ticket of the job here")

// trusted reports whether the market runs with an authority.
func (tk *tickets) trusted() bool { return tk.book != nil }

// recheck drops the checked tickets that no longer verify. The
// others stay: a manager never sends itself a job's ticket, nor a
// contractor one it sent before, so a ticket dropped for no reason would
// be refused where it is needed next.
func (tk *tickets) recheck(now time.Time) {
	tc := tk
	kept := tc.order[:0]
	for _, job := range tc.order {
		info := tc.byJob[job]
		if info == nil {
			continue
		}
		if _, err := tk.book.VerifyTicket(&info.ticket, now); err != nil {
			delete(tc.byJob, job)
			continue
		}
		kept = append(kept, job)
	}
	tc.order = kept
}

// check decodes and verifies a ticket and reads the spec it signs
// (canonical: the node the job is submitted to checks its canonical form
// and validity, spec.FromCanonical). The parts that depend on the bytes
// alone may have been done ahead (TicketReader).
func (tk *tickets) check(now time.Time, raw []byte, canonical bool) (*ticketInfo, error) {
	ticket, err := auth.DecodeTicket(raw)
	if err != nil {
		return nil, err
	}
	user, err := tk.book.VerifyTicket(&ticket, now)
	if err != nil {
		return nil, err
	}
	js, err := tk.checks.Spec(ticket.Spec, canonical)
	if err != nil {
		return nil, fmt.Errorf("job ticket of %s: %w", user.Name, err)
	}
	return &ticketInfo{digest: sha256.Sum256(raw), raw: raw, ticket: ticket, user: user, spec: js}, nil
}

// remember caches a checked ticket for job.
func (tk *tickets) remember(job string, info *ticketInfo) {
	tc := tk
	if tc.byJob == nil {
		tc.byJob = map[string]*ticketInfo{}
	}
	if _, ok := tc.byJob[job]; !ok {
		tc.order = append(tc.order, job)
		for len(tc.order) > ticketCacheSize {
			delete(tc.byJob, tc.order[0])
			tc.order = tc.order[1:]
		}
	}
	tc.byJob[job] = info
}

// job returns job's checked ticket: raw, checked now (and cached)
// unless the cache holds it already, or the cached one when raw is nil.
// The cached check lapses when a certificate of its chain expires.
func (tk *tickets) job(now time.Time, job string, raw []byte) (*ticketInfo, error) {
	info := tk.byJob[job]
	if raw != nil && (info == nil || info.digest != sha256.Sum256(raw)) {
		checked, err := tk.check(now, raw, false)
		if err != nil {
			return nil, err
		}
		if id := checked.ticket.JobID(); id != job {
			return nil, fmt.Errorf("job ticket names job %s, not %s", id, job)
		}
		tk.remember(job, checked)
		info = checked
	}
	if info == nil {
		return nil, errNeedTicket
	}
	if !now.Before(info.user.NotAfter) {
		return nil, fmt.Errorf("the credential of %s that signed job %s expired", info.user.Name, job)
	}
	return info, nil
}

// forPeer is the ticket a manager attaches to a message for job to
// peer to: the job's ticket the first time, nil once the peer has it
// (or in an open network, or to itself, whose contractor shares the
// manager's checks).
func (tk *tickets) forPeer(j *JobRecord, to NodeID) []byte {
	if !tk.trusted() || len(j.Ticket) == 0 || to == tk.self {
		return nil
	}
	tc := tk
	if tc.sent == nil {
		tc.sent = map[string]map[NodeID]bool{}
	}
	if tc.sent[j.ID] == nil {
		tc.sent[j.ID] = map[NodeID]bool{}
	}
	if tc.sent[j.ID][to] {
		return nil
	}
	tc.sent[j.ID][to] = true
	return j.Ticket
}

// lost records that peer does not hold job's ticket after all.
func (tk *tickets) lost(job string, peer NodeID) {
	delete(tk.sent[job], peer)
}

// done forgets whom a finished job's ticket went to.
func (tk *tickets) done(job string) { delete(tk.sent, job) }

// raw is the raw ticket this node checked for job, or nil.
func (tk *tickets) raw(job string) []byte {
	if info := tk.byJob[job]; info != nil {
		return info.raw
	}
	return nil
}
