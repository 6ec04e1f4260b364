package commit

import (
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/store"
)

// Batch is one loop turn's job records and the effects that wait for
// them.
type Batch struct {
	Recs    []store.Entry[market.JobRecord]
	Effects []market.Effect
	Done    chan struct{} // closed once carried out (a barrier), or nil
}

// Options are what the committer needs of its node.
type Options struct {
	// Commit writes job records in one store commit.
	Commit func([]store.Entry[market.JobRecord]) error
	// CarryOut carries out a turn's effects.
	CarryOut func([]market.Effect)
	// Failing reports a refused commit (err) and, with nil, that the
	// store takes commits again.
	Failing func(err error)
	// Stopping ends the retries: the node is closing, and what waits is
	// dropped (a restarted node reclaims from its store).
	Stopping <-chan struct{}
	// Retry is the wait between attempts of a refused commit; 500ms.
	Retry time.Duration
	// MaxTurns bounds the turns one commit takes.
	MaxTurns int
	// Done is called once per batch handled (carried out or dropped).
	Done func()
}

// Run commits the batches from ch, as many queued turns per commit as
// MaxTurns allows (a job's last version only), then carries out each
// turn's effects in order, until ch closes.
func Run(ch <-chan Batch, o Options) {
	if o.Retry <= 0 {
		o.Retry = 500 * time.Millisecond
	}
	var batch []Batch
	var recs []store.Entry[market.JobRecord]
	failing := false
	for b := range ch {
		batch = append(batch[:0], b)
	more:
		for len(batch) < o.MaxTurns {
			select {
			case b, ok := <-ch:
				if !ok {
					break more
				}
				batch = append(batch, b)
			default:
				break more
			}
		}
		recs = recs[:0]
		for _, b := range batch {
			for _, r := range b.Recs {
				recs = PutLatest(recs, r)
			}
		}
		stored := commit(o, recs, &failing)
		for _, b := range batch {
			if stored {
				o.CarryOut(b.Effects)
			}
			if b.Done != nil {
				close(b.Done)
			}
			o.Done()
		}
		clear(batch)
		clear(recs)
	}
}

// commit writes recs, retrying while the store refuses them, and reports
// whether they were stored (false only when the node stops first).
func commit(o Options, recs []store.Entry[market.JobRecord], failing *bool) bool {
	if len(recs) == 0 {
		return true
	}
	for {
		err := o.Commit(recs)
		if err == nil {
			if *failing {
				*failing = false
				o.Failing(nil)
			}
			return true
		}
		*failing = true
		o.Failing(err)
		select {
		case <-o.Stopping:
			return false
		case <-time.After(o.Retry):
		}
	}
}

// PutLatest adds e to recs, or replaces the version of the same job
// already there.
func PutLatest(recs []store.Entry[market.JobRecord], e store.Entry[market.JobRecord]) []store.Entry[market.JobRecord] {
	if i := slices.IndexFunc(recs, func(r store.Entry[market.JobRecord]) bool { return r.Key == e.Key }); i >= 0 {
		recs[i].Value = e.Value
		return recs
	}
	return append(recs, e)
}
