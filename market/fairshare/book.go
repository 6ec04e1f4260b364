package fairshare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// DefaultHalfLife is how fast usage is forgotten unless configured: a
// week (Slurm's PriorityDecayHalfLife default).
const DefaultHalfLife = 7 * 24 * time.Hour

// Limits of a summary.
const (
	// MaxUsers is the most users one summary names: the heaviest, when a
	// node ran work of more.
	MaxUsers = 1024
	// MaxUserLen bounds a user name.
	MaxUserLen = 256
	// MaxShare bounds a share.
	MaxShare = 1 << 20
	// MaxSummaries bounds the peers whose summaries a book keeps.
	MaxSummaries = 1 << 17
)

// Entry is one user's part of a summary.
type Entry struct {
	// Usage is the user's decayed usage on the node, in billed
	// core-seconds, as of the summary's time.
	Usage float64 `json:"usage"`
	// Share is the user's share, as the user's certificate gives it (1
	// when it names none).
	Share float64 `json:"share"`
}

// Summary is a node's decayed usage per user, as of At: every user it
// has usage of (a full summary, Base zero), or a delta: the users whose
// usage changed since its full summary of time Base, which a receiver
// holding that full summary applies over it. A delta names every user
// changed since Base, not since the delta before, so one lost delta is
// made good by the next.
type Summary struct {
	Node     string           `json:"node"`
	At       time.Time        `json:"at"`
	Base     time.Time        `json:"base,omitzero"`
	HalfLife time.Duration    `json:"half_life_ns"`
	Users    map[string]Entry `json:"users"`
}

// Delta reports whether s is a delta (not a full summary).
func (s Summary) Delta() bool { return !s.Base.IsZero() }

// Book is a node's fair-share state. Usage is kept normalized to a
// reference time ref: a usage u as of t is kept as u·2^((t−ref)/h), so
// that usage of different times adds up without decaying every entry
// at every step, and the network's total per user is kept as a running
// sum, changed by what one summary changes (O(its users), not O(peers ×
// users)). Dividing by 2^((now−ref)/h) gives usage as of now; the
// factors need only the users' parts of the total, which no decay
// changes. ref moves forward before the scale grows past 2^400.
//
// Users are kept in a slice, in the order the book first met them (the
// new users of one summary by name), and every sum over them runs in
// that order: a sum in a map's order differs in its last bits from run
// to run, and a factor compared with another's near a tie would make a
// simulation of one seed differ between runs.
type Book struct {
	halfLife time.Duration
	skew     time.Duration
	ref      time.Time
	refSet   bool
	idx      map[string]int
	users    []user
	// nLocal counts users with usage on this node.
	nLocal int
	// fullAt is the time of this node's last full summary (zero: none
	// yet); changed are the users whose usage or share changed since,
	// whom a delta names.
	fullAt  time.Time
	changed []int
	// peers is what the book keeps of each peer's summaries; a user's
	// total is its local usage plus every peer's.
	peers map[string]*peerUsage
	// version counts changes of what the factors depend on; the sums
	// are of version sumsAt.
	version     uint64
	sumsAt      uint64
	totalUsage  float64
	totalShares float64
}

// user is what a book keeps of one user it knows of: every user with
// usage, or with a share noted. A factor is computed when first asked
// for after a change (one summary changes every user's, a comparison
// asks for two).
type user struct {
	name  string
	share float64
	// local and total are normalized: this node's usage, and the
	// network's as known here.
	local, total float64
	factor       float64
	factorAt     uint64 // version+1 it was computed at; 0: never
	changed      bool   // in Book.changed
}

// peerUsage is what a book keeps of one peer's usage: the times of its
// latest full summary and of the latest summary applied (full or
// delta), and its usage per user index, normalized.
type peerUsage struct {
	full, at time.Time
	norm     map[int]float64
}

// NewBook is an empty book forgetting usage with half-life h
// (DefaultHalfLife when zero or less); skew bounds how far in the
// future a peer's summary may be dated.
func NewBook(h, skew time.Duration) *Book {
	if h <= 0 {
		h = DefaultHalfLife
	}
	return &Book{halfLife: h, skew: skew, idx: map[string]int{}, peers: map[string]*peerUsage{}, sumsAt: ^uint64(0)}
}

// HalfLife is the book's half-life.
func (b *Book) HalfLife() time.Duration { return b.halfLife }

// Version changes whenever the factors may have.
func (b *Book) Version() uint64 { return b.version }

// maxExp bounds the normalization's exponent (2^400 ≪ float64's range).
const maxExp = 400

// exp is the normalization exponent of time t, (t − ref)/h, moving ref
// (and rescaling what is kept) first when t is too far past it.
func (b *Book) exp(t time.Time) float64 {
	if !b.refSet {
		b.ref, b.refSet = t, true
	}
	x := float64(t.Sub(b.ref)) / float64(b.halfLife)
	if x > maxExp {
		b.rebase(t)
		x = 0
	}
	return x
}

// rebase moves ref to t, rescaling every normalized value, and drops
// usage that has decayed to nothing.
func (b *Book) rebase(t time.Time) {
	f := math.Exp2(-float64(t.Sub(b.ref)) / float64(b.halfLife))
	scale := func(v float64) float64 {
		if v *= f; v < 1e-12 {
			return 0
		}
		return v
	}
	b.nLocal = 0
	for i := range b.users {
		u := &b.users[i]
		u.local, u.total = scale(u.local), scale(u.total)
		if u.local > 0 {
			b.nLocal++
		}
	}
	for _, p := range b.peers {
		for i, v := range p.norm {
			if v = scale(v); v == 0 {
				delete(p.norm, i)
			} else {
				p.norm[i] = v
			}
		}
	}
	b.ref = t
	b.version++
}

// user is name's index, the user added (with share 1) if new.
func (b *Book) user(name string) int {
	i, ok := b.idx[name]
	if !ok {
		i = len(b.users)
		b.idx[name] = i
		b.users = append(b.users, user{name: name, share: 1})
		b.version++
	}
	return i
}

// Charge adds amount (billed core-seconds) of user's work, of share
// share (≤ 0: 1), run on this node and ended at now.
func (b *Book) Charge(now time.Time, name string, share, amount float64) {
	if name == "" || !(amount > 0) || math.IsInf(amount, 0) {
		return
	}
	v := amount * math.Exp2(b.exp(now))
	i := b.user(name) // before b.users is read: it may grow
	u := &b.users[i]
	if u.local == 0 {
		b.nLocal++
	}
	u.local += v
	u.total += v
	b.setShare(i, share)
	b.markChanged(i)
	b.version++
}

func (b *Book) setShare(i int, share float64) {
	if !(share > 0) || share > MaxShare {
		share = 1
	}
	if u := &b.users[i]; u.share != share {
		u.share = share
		if u.local > 0 {
			b.markChanged(i) // its entry in this node's summary changed
		}
		b.version++
	}
}

// markChanged notes that user i's entry in this node's summary changed.
func (b *Book) markChanged(i int) {
	if !b.users[i].changed {
		b.users[i].changed = true
		b.changed = append(b.changed, i)
	}
}

// NoteShare records user's share as a ticket or certificate gives it,
// for users with work queued here and no usage yet.
func (b *Book) NoteShare(name string, share float64) {
	if name != "" {
		b.setShare(b.user(name), share)
	}
}

// Summarize is this node's summary to publish as of now: a full one
// (Local) when full is asked for, when there is none yet to build on,
// or when more than half of its users changed since the last (a delta
// would then cost about as much); else a delta of the users changed
// since the last full one.
func (b *Book) Summarize(self string, now time.Time, full bool) Summary {
	if full || b.fullAt.IsZero() || 2*len(b.changed) > b.nLocal {
		s := b.Local(self, now)
		b.fullAt = now
		for _, i := range b.changed {
			b.users[i].changed = false
		}
		b.changed = b.changed[:0]
		return s
	}
	scale := math.Exp2(-b.exp(now))
	s := Summary{Node: self, At: now, Base: b.fullAt, HalfLife: b.halfLife, Users: make(map[string]Entry, len(b.changed))}
	for _, i := range b.changed[:min(len(b.changed), MaxUsers)] {
		if u := &b.users[i]; u.local > 0 {
			s.Users[u.name] = Entry{Usage: u.local * scale, Share: u.share}
		}
	}
	return s
}

// FullAt is the time of this node's last full summary (zero: none yet).
func (b *Book) FullAt() time.Time { return b.fullAt }

// Local is this node's full summary as of now: its heaviest MaxUsers
// users.
func (b *Book) Local(self string, now time.Time) Summary {
	scale := math.Exp2(-b.exp(now))
	users := make([]*user, 0, b.nLocal)
	for i := range b.users {
		if b.users[i].local > 0 {
			users = append(users, &b.users[i])
		}
	}
	sort.Slice(users, func(i, j int) bool {
		if users[i].local != users[j].local {
			return users[i].local > users[j].local
		}
		return users[i].name < users[j].name
	})
	s := Summary{Node: self, At: now, HalfLife: b.halfLife, Users: map[string]Entry{}}
	for _, u := range users[:min(len(users), MaxUsers)] {
		s.Users[u.name] = Entry{Usage: u.local * scale, Share: u.share}
	}
	return s
}

// HasLocal reports whether this node has usage of its own to summarize.
func (b *Book) HasLocal() bool { return b.nLocal > 0 }

// Errors of Accept.
var (
	ErrSender    = errors.New("not from the node it summarizes")
	ErrStale     = errors.New("older than the one kept")
	ErrFuture    = errors.New("dated in the future")
	ErrHalfLife  = errors.New("another half-life")
	ErrMalformed = errors.New("malformed")
	// ErrNoBase is a delta over a full summary the book does not hold
	// (lost, or sent before this node joined): not the sender's fault;
	// the next full summary makes it good.
	ErrNoBase = errors.New("over a full summary not held")
)

// Accept keeps peer from's summary s, received at now: a full one in
// place of what is kept of from, a delta over it. Only from the node it
// names, dated not in the future (give or take the skew) and after the
// last applied, with this book's half-life (usage decayed at another
// rate would not add up), within the limits; a delta only over the full
// summary it names.
func (b *Book) Accept(now time.Time, from string, s Summary) error {
	bad := func(err error, format string, a ...any) error {
		return fmt.Errorf("usage summary from %s: %w: %s", from, err, fmt.Sprintf(format, a...))
	}
	switch {
	case s.Node != from:
		return bad(ErrSender, "it names %s", strconv.Quote(s.Node))
	case s.At.After(now.Add(b.skew)):
		return bad(ErrFuture, "at %s", s.At.UTC().Format(time.RFC3339))
	case s.HalfLife != b.halfLife:
		return bad(ErrHalfLife, "%v, this node's is %v", s.HalfLife, b.halfLife)
	case len(s.Users) > MaxUsers:
		return bad(ErrMalformed, "%d users, over the limit of %d", len(s.Users), MaxUsers)
	case s.Delta() && s.Base.After(s.At):
		return bad(ErrMalformed, "a delta at %s over a later full summary", s.At.UTC().Format(time.RFC3339Nano))
	}
	for u, e := range s.Users {
		switch {
		case u == "" || len(u) > MaxUserLen || !utf8.ValidString(u):
			return bad(ErrMalformed, "user name %q", u)
		case !(e.Usage >= 0) || math.IsInf(e.Usage, 0):
			return bad(ErrMalformed, "usage of %s: %v", u, e.Usage)
		case !(e.Share > 0) || e.Share > MaxShare:
			return bad(ErrMalformed, "share of %s: %v", u, e.Share)
		}
	}
	p := b.peers[from]
	if s.Delta() && (p == nil || !p.full.Equal(s.Base)) {
		return bad(ErrNoBase, "of %s", s.Base.UTC().Format(time.RFC3339Nano))
	}
	if p != nil && !s.At.After(p.at) {
		return bad(ErrStale, "at %s, the one kept is of %s", s.At.UTC().Format(time.RFC3339Nano), p.at.UTC().Format(time.RFC3339Nano))
	}
	if p == nil && len(b.peers) >= MaxSummaries {
		return bad(ErrMalformed, "this node keeps %d summaries already", MaxSummaries)
	}
	// Users new to the book are added by name, so that the order of
	// the book's sums does not depend on a map's.
	var fresh []string
	for u := range s.Users {
		if _, ok := b.idx[u]; !ok {
			fresh = append(fresh, u)
		}
	}
	sort.Strings(fresh)
	for _, u := range fresh {
		b.user(u)
	}
	// What is kept of from is updated in place: per user, the old usage
	// comes off the total before the new goes on; a full summary drops
	// the users it no longer names, a delta names only those changed.
	if p == nil {
		p = &peerUsage{norm: make(map[int]float64, len(s.Users))}
		b.peers[from] = p
	}
	if !s.Delta() {
		for i, v := range p.norm {
			if _, still := s.Users[b.users[i].name]; still {
				continue
			}
			b.users[i].drop(v)
			delete(p.norm, i)
		}
		p.full = s.At
	}
	p.at = s.At
	scale := math.Exp2(b.exp(s.At))
	for name, e := range s.Users {
		i := b.idx[name]
		u := &b.users[i]
		if v, had := p.norm[i]; had {
			u.drop(v)
		}
		p.norm[i] = e.Usage * scale
		u.total += p.norm[i]
		b.setShare(i, e.Share)
	}
	b.version++
	return nil
}

// drop takes v, a summary's usage, off the user's total, which a
// rounding must not leave below zero.
func (u *user) drop(v float64) {
	if u.total -= v; u.total <= 0 {
		u.total = 0
	}
}

// Usage is every user's decayed usage in the network as this node
// knows it, as of now: its own and its peers' latest summaries.
func (b *Book) Usage(now time.Time) map[string]float64 {
	scale := math.Exp2(-b.exp(now))
	out := map[string]float64{}
	for _, u := range b.users {
		if u.total > 0 {
			out[u.name] = u.total * scale
		}
	}
	return out
}

// UserUsage is user's decayed usage in the network as this node knows
// it, as of now.
func (b *Book) UserUsage(now time.Time, name string) float64 {
	i, ok := b.idx[name]
	if !ok {
		return 0
	}
	return b.users[i].total * math.Exp2(-b.exp(now))
}

// Factors is F = 2^(−U/S) for every user with usage or a known share:
// U the user's part of the network's usage, S their part of the
// shares (of the users known). 1 for everyone while nobody has usage.
func (b *Book) Factors(now time.Time) map[string]float64 {
	f := make(map[string]float64, len(b.users))
	for _, u := range b.users {
		f[u.name] = b.Factor(now, u.name)
	}
	return f
}

// Factor is user's factor (1 for a user nobody has charged, or none).
func (b *Book) Factor(now time.Time, name string) float64 {
	i, ok := b.idx[name]
	if name == "" || !ok {
		return 1
	}
	if b.sumsAt != b.version {
		b.totalUsage, b.totalShares = 0, 0
		for _, u := range b.users { // normalized: the parts are what count
			b.totalUsage += u.total
			b.totalShares += u.share
		}
		b.sumsAt = b.version
	}
	u := &b.users[i]
	if u.factorAt == b.version+1 {
		return u.factor
	}
	u.factor, u.factorAt = 1, b.version+1
	if b.totalUsage > 0 {
		u.factor = math.Exp2(-(u.total / b.totalUsage) / (u.share / b.totalShares))
	}
	return u.factor
}
