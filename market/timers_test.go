package market

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

// TestTimersFireInTimeOrder: timers set, moved and stopped in random
// order fire in time order (ties by key), each once, none before its
// time, and a stopped one never; NextTick's reading, the queue's
// earliest, is always the next to fire.
func TestTimersFireInTimeOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var q timers
		want := map[timerKey]time.Time{}
		for range 300 {
			k := timerKey{kind: timerKind(rng.IntN(3)), id: fmt.Sprint("k", rng.IntN(80))}
			if k.kind == timerAuction {
				k = timerKey{kind: timerAuction, task: TaskKey{Job: "j", Task: "t", Replica: rng.IntN(80)}}
			}
			switch rng.IntN(4) {
			case 0:
				q.stop(k)
				delete(want, k)
			default:
				at := t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
				q.set(k, at)
				want[k] = at
			}
		}
		type fired struct {
			k  timerKey
			at time.Time
		}
		var order []fired
		for now := t0; q.len() > 0; now = now.Add(time.Duration(rng.IntN(50)) * time.Millisecond) {
			next, _ := q.next()
			q.popDue(now, func(k timerKey) {
				if want[k].After(now) {
					t.Fatalf("seed %d: %+v fired at %v, set for %v", seed, k, now.Sub(t0), want[k].Sub(t0))
				}
				if !want[k].Equal(next) && len(order) > 0 && want[k].Before(order[len(order)-1].at) {
					t.Fatalf("seed %d: %+v fired out of order", seed, k)
				}
				order = append(order, fired{k, want[k]})
			})
		}
		if len(order) != len(want) {
			t.Fatalf("seed %d: %d timers fired, %d set", seed, len(order), len(want))
		}
		sorted := slices.Clone(order)
		slices.SortFunc(sorted, func(a, b fired) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.k.compare(b.k)
		})
		for i := range order {
			if order[i] != sorted[i] {
				t.Fatalf("seed %d: fired %d-th %+v at %v, want %+v at %v", seed, i, order[i].k, order[i].at.Sub(t0), sorted[i].k, sorted[i].at.Sub(t0))
			}
		}
	}
}

// TestTickPlacesRetriesInTimeOrder: replicas whose back-offs end in
// random order open their auctions in time order, each at its own time
// and no sooner, driven only by NextTick.
func TestTickPlacesRetriesInTimeOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := New(Config{Self: "n0", NoSteal: true, JobReplicas: -1})
	if err != nil {
		t.Fatal(err)
	}
	m.Tick(t0)
	rng := rand.New(rand.NewPCG(7, 7))
	at := map[string]time.Time{}
	for i := range 40 {
		id := fmt.Sprintf("j%02d", i)
		j := newJobRecord(id, oneTaskSpec(), "n0", t0)
		back := t0.Add(time.Duration(1+rng.IntN(10000)) * time.Millisecond)
		j.Tasks[0].NotBefore = back
		at[id] = back
		m.jobs[id] = &j
		m.active = append(m.active, id)
		m.dl.activate(id)
		m.dl.retimeJob(id)
	}
	var opened []string
	for n, next := 0, m.NextTick(); !next.IsZero() && len(opened) < len(at); n, next = n+1, m.NextTick() {
		if n > 10000 {
			t.Fatalf("%d ticks and %d of %d replicas placed: NextTick does not move on", n, len(opened), len(at))
		}
		m.Tick(next)
		for k := range m.auctions {
			if !slices.Contains(opened, k.Job) {
				if at[k.Job].After(next) {
					t.Fatalf("%s placed at %v, its back-off ends at %v", k.Job, next.Sub(t0), at[k.Job].Sub(t0))
				}
				opened = append(opened, k.Job)
				if !at[k.Job].Equal(next) {
					t.Fatalf("%s placed at %v, not when its back-off ended (%v)", k.Job, next.Sub(t0), at[k.Job].Sub(t0))
				}
			}
		}
		m.Ready()
	}
	if len(opened) != len(at) {
		t.Fatalf("%d of %d replicas placed", len(opened), len(at))
	}
}

func oneTaskSpec() spec.Job {
	js, err := spec.Parse([]byte(`{"name": "x", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "1"}}]}`), time.Unix(0, 1))
	if err != nil {
		panic(err)
	}
	return *js
}
