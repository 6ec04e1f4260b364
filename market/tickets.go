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
	jobs  map[string]*ticketInfo
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
func (t *tickets) trusted() bool { return t.book != nil }

// recheck drops the checked tickets that no longer verify. The
// others stay: a manager never sends itself a job's ticket, nor a
// contractor one it sent before, so a ticket dropped for no reason would
// be refused where it is needed next.
func (t *tickets) recheck(now time.Time) {
	tc := t
	kept := tc.order[:0]
	for _, job := range tc.order {
		info := tc.jobs[job]
		if info == nil {
			continue
		}
		if _, err := t.book.VerifyTicket(&info.ticket, now); err != nil {
			delete(tc.jobs, job)
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
func (t *tickets) check(now time.Time, raw []byte, canonical bool) (*ticketInfo, error) {
	tk, err := auth.DecodeTicket(raw)
	if err != nil {
		return nil, err
	}
	user, err := t.book.VerifyTicket(&tk, now)
	if err != nil {
		return nil, err
	}
	js, err := t.checks.Spec(tk.Spec, canonical)
	if err != nil {
		return nil, fmt.Errorf("job ticket of %s: %w", user.Name, err)
	}
	return &ticketInfo{digest: sha256.Sum256(raw), raw: raw, ticket: tk, user: user, spec: js}, nil
}

// remember caches a checked ticket for job.
func (t *tickets) remember(job string, info *ticketInfo) {
	tc := t
	if tc.jobs == nil {
		tc.jobs = map[string]*ticketInfo{}
	}
	if _, ok := tc.jobs[job]; !ok {
		tc.order = append(tc.order, job)
		for len(tc.order) > ticketCacheSize {
			delete(tc.jobs, tc.order[0])
			tc.order = tc.order[1:]
		}
	}
	tc.jobs[job] = info
}

// job returns job's checked ticket: raw, checked now (and cached)
// unless the cache holds it already, or the cached one when raw is nil.
// The cached check lapses when a certificate of its chain expires.
func (t *tickets) job(now time.Time, job string, raw []byte) (*ticketInfo, error) {
	info := t.jobs[job]
	if raw != nil && (info == nil || info.digest != sha256.Sum256(raw)) {
		checked, err := t.check(now, raw, false)
		if err != nil {
			return nil, err
		}
		if id := checked.ticket.JobID(); id != job {
			return nil, fmt.Errorf("job ticket names job %s, not %s", id, job)
		}
		t.remember(job, checked)
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
func (t *tickets) forPeer(j *JobRecord, to NodeID) []byte {
	if !t.trusted() || len(j.Ticket) == 0 || to == t.self {
		return nil
	}
	tc := t
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
func (t *tickets) lost(job string, peer NodeID) {
	delete(t.sent[job], peer)
}

// done forgets whom a finished job's ticket went to.
func (t *tickets) done(job string) { delete(t.sent, job) }

// raw is the raw ticket this node checked for job, or nil.
func (t *tickets) raw(job string) []byte {
	if info := t.jobs[job]; info != nil {
		return info.raw
	}
	return nil
}
