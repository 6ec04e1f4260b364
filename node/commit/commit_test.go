package commit

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/store"
)

// TestRefusedCommitWithholdsEffects: while the store refuses a commit,
// its turn's effects and every later turn's wait, in order; the node
// hears it is failing and, once a retry succeeds, that it is not.
func TestRefusedCommitWithholdsEffects(t *testing.T) {
	var mu sync.Mutex
	refuse := 3
	var carried []string
	var failing []bool
	ch := make(chan Batch, 8)
	handled := make(chan struct{}, 8)
	o := Options{
		Commit: func([]store.Entry[market.JobRecord]) error {
			mu.Lock()
			defer mu.Unlock()
			if refuse > 0 {
				refuse--
				return errors.New("disk full")
			}
			return nil
		},
		CarryOut: func(e []market.Effect) {
			mu.Lock()
			defer mu.Unlock()
			for _, x := range e {
				carried = append(carried, x.(market.Event).Text)
			}
		},
		Failing: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			failing = append(failing, err != nil)
		},
		Stopping: make(chan struct{}),
		Retry:    time.Millisecond,
		MaxTurns: 1,
		Done:     func() { handled <- struct{}{} },
	}
	rec := store.Entry[market.JobRecord]{Key: "j", Value: market.JobRecord{ID: "j"}}
	ch <- Batch{Recs: []store.Entry[market.JobRecord]{rec}, Effects: []market.Effect{market.Event{Text: "first"}}}
	ch <- Batch{Effects: []market.Effect{market.Event{Text: "second"}}}
	close(ch)
	Run(ch, o)
	if len(handled) != 2 {
		t.Fatalf("%d batches handled", len(handled))
	}
	if len(carried) != 2 || carried[0] != "first" || carried[1] != "second" {
		t.Fatalf("carried out %v", carried)
	}
	if len(failing) != 4 || !failing[0] || !failing[2] || failing[3] {
		t.Fatalf("failing reports %v, want three refusals then recovery", failing)
	}
}

// TestStoppingDropsWhatWaits: a node that stops while its store refuses
// drops the waiting effects (its store reclaims on restart) instead of
// sending what no record backs.
func TestStoppingDropsWhatWaits(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	ch := make(chan Batch, 1)
	done := make(chan struct{})
	ch <- Batch{Recs: []store.Entry[market.JobRecord]{{Key: "j"}}, Effects: []market.Effect{market.Event{Text: "x"}}, Done: done}
	close(ch)
	carried := 0
	Run(ch, Options{Commit: func([]store.Entry[market.JobRecord]) error { return errors.New("io error") },
		CarryOut: func([]market.Effect) { carried++ }, Failing: func(error) {}, Stopping: stop, MaxTurns: 4, Done: func() {}})
	if carried != 0 {
		t.Fatal("effects carried out without their records")
	}
	select {
	case <-done:
	default:
		t.Fatal("the batch's barrier was not released")
	}
}
