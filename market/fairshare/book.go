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

// Summary is a node's decayed usage per user, as of At.
type Summary struct {
	Node     string           `json:"node"`
	At       time.Time        `json:"at"`
	HalfLife time.Duration    `json:"half_life_ns"`
	Users    map[string]Entry `json:"users"`
}

// Book is a node's fair-share state. Usage is kept normalized to a
// reference time ref: a usage u as of t is kept as u·2^((t−ref)/h), so
// that usage of different times adds up without decaying every entry
// at every step, and the network's total per user is kept as a running
// sum, changed by what one summary changes (O(its users), not O(peers ×
// users)). Dividing by 2^((now−ref)/h) gives usage as of now; the
// factors need only the users' parts of the total, which no decay
// changes. ref moves forward before the scale grows past 2^400.
type Book struct {
	halfLife time.Duration
	skew     time.Duration
	ref      time.Time
	refSet   bool
	// local is this node's own usage per user, normalized.
	local  map[string]float64
	shares map[string]float64
	peers  map[string]Summary
	// peerNorm is each kept summary's usage, normalized; total is local
	// plus every peerNorm, per user.
	peerNorm map[string]map[string]float64
	total    map[string]float64
	// version counts changes of what the factors depend on.
	version uint64
	// factors, computed at version factorsAt.
	factors   map[string]float64
	factorsAt uint64
}

// NewBook is an empty book forgetting usage with half-life h
// (DefaultHalfLife when zero or less); skew bounds how far in the
// future a peer's summary may be dated.
func NewBook(h, skew time.Duration) *Book {
	if h <= 0 {
		h = DefaultHalfLife
	}
	return &Book{halfLife: h, skew: skew, local: map[string]float64{}, shares: map[string]float64{}, peers: map[string]Summary{},
		peerNorm: map[string]map[string]float64{}, total: map[string]float64{}, factorsAt: ^uint64(0)}
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
// users whose usage has decayed to nothing.
func (b *Book) rebase(t time.Time) {
	f := math.Exp2(-float64(t.Sub(b.ref)) / float64(b.halfLife))
	scale := func(m map[string]float64) {
		for u, v := range m {
			if v *= f; v < 1e-12 {
				delete(m, u)
			} else {
				m[u] = v
			}
		}
	}
	scale(b.local)
	scale(b.total)
	for _, m := range b.peerNorm {
		scale(m)
	}
	b.ref = t
}

// Charge adds amount (billed core-seconds) of user's work, of share
// share (≤ 0: 1), run on this node and ended at now.
func (b *Book) Charge(now time.Time, user string, share, amount float64) {
	if user == "" || !(amount > 0) || math.IsInf(amount, 0) {
		return
	}
	v := amount * math.Exp2(b.exp(now))
	b.local[user] += v
	b.total[user] += v
	b.setShare(user, share)
	b.version++
}

func (b *Book) setShare(user string, share float64) {
	if !(share > 0) || share > MaxShare {
		share = 1
	}
	if old, ok := b.shares[user]; !ok || old != share {
		b.shares[user] = share
		b.version++
	}
}

// NoteShare records user's share as a ticket or certificate gives it,
// for users with work queued here and no usage yet.
func (b *Book) NoteShare(user string, share float64) {
	if user != "" {
		b.setShare(user, share)
	}
}

// Local is this node's summary as of now: its heaviest MaxUsers users.
func (b *Book) Local(self string, now time.Time) Summary {
	scale := math.Exp2(-b.exp(now))
	users := make([]string, 0, len(b.local))
	for u := range b.local {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool {
		if b.local[users[i]] != b.local[users[j]] {
			return b.local[users[i]] > b.local[users[j]]
		}
		return users[i] < users[j]
	})
	s := Summary{Node: self, At: now, HalfLife: b.halfLife, Users: map[string]Entry{}}
	for _, u := range users[:min(len(users), MaxUsers)] {
		s.Users[u] = Entry{Usage: b.local[u] * scale, Share: b.shareOf(u)}
	}
	return s
}

// HasLocal reports whether this node has usage of its own to summarize.
func (b *Book) HasLocal() bool { return len(b.local) > 0 }

func (b *Book) shareOf(u string) float64 {
	if s, ok := b.shares[u]; ok {
		return s
	}
	return 1
}

// Errors of Accept.
var (
	ErrSender    = errors.New("not from the node it summarizes")
	ErrStale     = errors.New("older than the one kept")
	ErrFuture    = errors.New("dated in the future")
	ErrHalfLife  = errors.New("another half-life")
	ErrMalformed = errors.New("malformed")
)

// Accept keeps peer from's summary s, received at now, in place of the
// one kept: only from the node it names, dated not in the future (give
// or take the skew) and after the one kept, with this book's half-life
// (usage decayed at another rate would not add up), within the limits.
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
	old, ok := b.peers[from]
	if ok && !s.At.After(old.At) {
		return bad(ErrStale, "at %s, the one kept is of %s", s.At.UTC().Format(time.RFC3339Nano), old.At.UTC().Format(time.RFC3339Nano))
	}
	if !ok && len(b.peers) >= MaxSummaries {
		return bad(ErrMalformed, "this node keeps %d summaries already", MaxSummaries)
	}
	for u, v := range b.peerNorm[from] {
		if b.total[u] -= v; b.total[u] <= 0 {
			delete(b.total, u)
		}
	}
	scale := math.Exp2(b.exp(s.At))
	norm := make(map[string]float64, len(s.Users))
	for u, e := range s.Users {
		norm[u] = e.Usage * scale
		b.total[u] += norm[u]
		b.setShare(u, e.Share)
	}
	b.peers[from], b.peerNorm[from] = s, norm
	b.version++
	return nil
}

// Usage is every user's decayed usage in the network as this node
// knows it, as of now: its own and its peers' latest summaries.
func (b *Book) Usage(now time.Time) map[string]float64 {
	scale := math.Exp2(-b.exp(now))
	out := make(map[string]float64, len(b.total))
	for u, v := range b.total {
		out[u] = v * scale
	}
	return out
}

// Factors is F = 2^(−U/S) for every user with usage or a known share:
// U the user's part of the network's usage, S their part of the
// shares (of the users known). 1 for everyone while nobody has usage.
// Computed again only when something changed (Version).
func (b *Book) Factors(now time.Time) map[string]float64 {
	if b.factorsAt == b.version && b.factors != nil {
		return b.factors
	}
	usage := b.total // normalized: the parts of the total are what count
	var totalU, totalS float64
	for _, v := range usage {
		totalU += v
	}
	users := map[string]bool{}
	for u := range usage {
		users[u] = true
	}
	for u := range b.shares {
		users[u] = true
	}
	for u := range users {
		totalS += b.shareOf(u)
	}
	f := make(map[string]float64, len(users))
	for u := range users {
		if totalU <= 0 {
			f[u] = 1
			continue
		}
		f[u] = math.Exp2(-(usage[u] / totalU) / (b.shareOf(u) / totalS))
	}
	b.factors, b.factorsAt = f, b.version
	return f
}

// Factor is user's factor (1 for a user nobody has charged, or none).
func (b *Book) Factor(now time.Time, user string) float64 {
	if user == "" {
		return 1
	}
	if f, ok := b.Factors(now)[user]; ok {
		return f
	}
	return 1
}
