package market

import (
	"fmt"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// ScoreInput is what a contractor knows when it scores a bid.
type ScoreInput struct {
	Now      time.Time
	Offer    TaskOffer
	Capacity resource.Vector // the contractor's capacity
	Free     resource.Vector // what is free on it now
	Start    time.Time       // predicted start
	Finish   time.Time       // predicted finish
	Runtime  time.Duration   // predicted runtime on this node
	// SuccessRate is the Laplace-smoothed share of this job type's runs on
	// this node that succeeded: (ok+1)/(runs+2) (0.5 with no history).
	SuccessRate float64
	Weights     Weights
	// FragDelta is how much placing the task now grows this node's GPU
	// fragmentation (thousandths of a GPU) under the task mix the node
	// has seen, when FragKnown: the task asks for a GPU, fits now, and
	// the mix has GPU work in it. See FragScore.
	FragDelta float64
	FragKnown bool
}

// Scorer turns a ScoreInput into a bid score; higher wins. Scores should
// lie in [0, 1]. Implementations are pure.
type Scorer interface {
	Name() string
	Score(in ScoreInput) float64
}

// Registry is a set of scorers by name, from which Config.Scorer picks
// the one a market bids with. Build one with NewRegistry; it is not
// changed afterwards, so markets may share it.
type Registry map[string]Scorer

// NewRegistry builds a registry of the given scorers; a duplicate name is
// an error.
func NewRegistry(scorers ...Scorer) (Registry, error) {
	r := make(Registry, len(scorers))
	for _, s := range scorers {
		if _, dup := r[s.Name()]; dup {
			return nil, fmt.Errorf("market: scorer %q registered twice", s.Name())
		}
		r[s.Name()] = s
	}
	return r, nil
}

// DefaultScorers is a registry of the built-in scorers: weighted,
// best-fit, least-loaded and earliest-finish.
func DefaultScorers() Registry {
	r, err := NewRegistry(Weighted{}, BestFit{}, LeastLoaded{}, EarliestFinish{})
	if err != nil {
		panic(err) // the built-in names are distinct
	}
	return r
}

// Names lists the registry's scorers, sorted.
func (r Registry) Names() []string {
	out := make([]string, 0, len(r))
	for n := range r {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Urgency is U = R / (finish − now): 1 when the task would start at once,
// falling as its predicted wait grows; a bid that would miss the task's
// deadline has U quartered.
func Urgency(in ScoreInput) float64 {
	span := in.Finish.Sub(in.Now)
	u := 1.0
	if span > 0 && in.Runtime > 0 {
		u = min(1, float64(in.Runtime)/float64(span))
	}
	if !in.Offer.Deadline.IsZero() && in.Finish.After(in.Offer.Deadline) {
		u *= 0.25
	}
	return u
}

// dims lists the (requested, free, capacity) triples of the dimensions a
// request uses: CPU, memory when asked, and the GPU share when asked.
func dims(req resource.Request, free, capv resource.Vector) [][3]float64 {
	d := [][3]float64{{float64(req.CPU), float64(free.CPU), float64(capv.CPU)}}
	if req.Memory > 0 {
		d = append(d, [3]float64{float64(req.Memory), float64(free.Memory), float64(capv.Memory)})
	}
	if req.GPU.Wants() {
		want := float64(req.GPU.Count * resource.WholeGPU)
		if req.GPU.Share > 0 {
			want = float64(req.GPU.Share)
		}
		d = append(d, [3]float64{want, float64(free.GPUShare()), float64(capv.GPUShare())})
	}
	return d
}

// Match is M = 1 − mean over used dimensions of (free − requested) /
// capacity: the best fit leaves the least behind. A task that asks for no
// GPU scores half on a node with GPUs, to keep them for GPU work. When the
// task would queue rather than start, the leftover is taken against the
// whole capacity (the node will be free when it starts).
//
// For a GPU task with FragKnown, M = FragWeight·FragScore(FragDelta) +
// (1 − FragWeight)·(the fit above): the node whose GPUs the placement
// leaves most usable for the task mix wins, and the tightest fit breaks
// near-ties (frag.go).
func Match(in ScoreInput) float64 {
	m := fitMatch(in)
	if in.FragKnown && in.Offer.Request.GPU.Wants() {
		m = FragWeight*FragScore(in.FragDelta) + (1-FragWeight)*m
	}
	return m
}

// FragWeight is the share of Match that GPU fragmentation takes for a GPU
// task when the bidder knows it. On the Alibaba GPU trace (docs/perf/
// notes.md) 0.7–0.9 placed alike, 0.6 and 0.95 a little worse, and
// fragmentation alone (1) lost the tight fits that break its ties.
const FragWeight = 0.8

// fitMatch is Match's best-fit part.
func fitMatch(in ScoreInput) float64 {
	free := in.Free
	if in.Start.After(in.Now) {
		free = in.Capacity
	}
	var sum float64
	ds := dims(in.Offer.Request, free, in.Capacity)
	for _, d := range ds {
		if d[2] <= 0 {
			continue
		}
		left := max(d[1]-d[0], 0) / d[2]
		sum += min(left, 1)
	}
	m := 1 - sum/float64(len(ds))
	if !in.Offer.Request.GPU.Wants() && len(in.Capacity.GPUs) > 0 {
		m *= 0.5
	}
	return m
}

// Efficiency is E = success rate × min(1, reference / predicted runtime),
// where the reference is the user's estimate (or the prediction itself
// when there is none): nodes that run this job type fast and reliably
// score high.
func Efficiency(in ScoreInput) float64 {
	sr := in.SuccessRate
	if sr <= 0 {
		sr = 0.5
	}
	ref := in.Offer.Estimate
	if ref <= 0 || in.Runtime <= 0 {
		return sr
	}
	return sr * min(1, float64(ref)/float64(in.Runtime))
}

// Weighted is the default scorer: (wU·U + wM·M + wE·E) / (wU + wM + wE).
type Weighted struct{}

// Name is "weighted".
func (Weighted) Name() string { return "weighted" }

// Score implements Scorer.
func (Weighted) Score(in ScoreInput) float64 {
	w := in.Weights
	total := w.Urgency + w.Match + w.Efficiency
	if total <= 0 {
		w, total = DefaultWeights, 1
	}
	return (w.Urgency*Urgency(in) + w.Match*Match(in) + w.Efficiency*Efficiency(in)) / total
}

// BestFit scores by Match alone, with urgency breaking ties.
type BestFit struct{}

// Name is "best-fit".
func (BestFit) Name() string { return "best-fit" }

// Score implements Scorer.
func (BestFit) Score(in ScoreInput) float64 { return 0.9*Match(in) + 0.1*Urgency(in) }

// LeastLoaded prefers the node with the most left over after placement:
// the mean over used dimensions of (free − requested) / capacity, with
// urgency breaking ties.
type LeastLoaded struct{}

// Name is "least-loaded".
func (LeastLoaded) Name() string { return "least-loaded" }

// Score implements Scorer.
func (LeastLoaded) Score(in ScoreInput) float64 {
	var sum float64
	ds := dims(in.Offer.Request, in.Free, in.Capacity)
	for _, d := range ds {
		if d[2] > 0 {
			sum += max(d[1]-d[0], 0) / d[2]
		}
	}
	return 0.9*sum/float64(len(ds)) + 0.1*Urgency(in)
}

// EarliestFinish scores 1 / (1 + seconds until the predicted finish).
type EarliestFinish struct{}

// Name is "earliest-finish".
func (EarliestFinish) Name() string { return "earliest-finish" }

// Score implements Scorer.
func (EarliestFinish) Score(in ScoreInput) float64 {
	return 1 / (1 + max(in.Finish.Sub(in.Now).Seconds(), 0))
}
