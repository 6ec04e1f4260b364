package sim

import (
	"math"
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
)

// easy-fairshare is the central baseline of the fair share (issue 46):
// textbook EASY whose queue is ordered by Slurm's classic multifactor
// priority over exact usage — every run charged to its job's user the
// moment it ends, on the one scheduler that sees them all — instead of
// by arrival. It uses the market's formula and weights
// (market.FairShareConfig): F = 2^(−U/S) with U the user's part of the
// decayed usage and S their part of the shares (all 1, of the users with
// usage or queued jobs), plus age (since arrival, over MaxAge) and size.
// It is what the nodes' decentralized fair share, which sums summaries
// that arrive late, is measured against.

// centralShare is easy-fairshare's exact decayed usage per user.
type centralShare struct {
	cfg   market.FairShareConfig
	usage map[string]float64
	at    time.Duration
}

func newCentralShare() *centralShare {
	return &centralShare{cfg: market.Defaults().FairShare, usage: map[string]float64{}}
}

// charge adds amount core-seconds of user's, ended at now.
func (s *centralShare) charge(now time.Duration, user string, amount float64) {
	if now > s.at {
		f := math.Exp2(-float64(now-s.at) / float64(s.cfg.HalfLife))
		for u := range s.usage {
			s.usage[u] *= f
		}
		s.at = now
	}
	s.usage[user] += amount
}

// factors are F for the users of queued units and those with usage.
func (s *centralShare) factors(queued map[string]bool) map[string]float64 {
	users := map[string]bool{}
	var total float64
	for u, v := range s.usage {
		users[u] = true
		total += v
	}
	for u := range queued {
		users[u] = true
	}
	f := make(map[string]float64, len(users))
	for u := range users {
		if total <= 0 {
			f[u] = 1
			continue
		}
		f[u] = math.Exp2(-(s.usage[u] / total) * float64(len(users)))
	}
	return f
}

// fairOrder is the queue in easy-fairshare's order: multifactor
// priority, highest first, then arrival.
func (c *central) fairOrder() []*unit {
	e := c.e
	queued := map[string]bool{}
	for _, u := range c.queue {
		queued[e.w.Jobs[u.job].User] = true
	}
	f := c.share.factors(queued)
	largest := 0.0
	for _, n := range e.nodes {
		largest = max(largest, float64(n.cap.CPU))
	}
	w := c.share.cfg
	score := make(map[*unit]float64, len(c.queue))
	for _, u := range c.queue {
		j := &e.w.Jobs[u.job]
		age := min(float64(e.now-j.Submit)/float64(w.MaxAge), 1)
		size := 0.0
		if largest > 0 {
			size = 1 - min(float64(u.req.CPU)/largest, 1)
		}
		score[u] = w.FairShare*f[j.User] + w.Age*max(age, 0) + w.Size*size
	}
	order := slices.Clone(c.queue)
	slices.SortStableFunc(order, func(a, b *unit) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	return order
}
