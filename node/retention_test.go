package node

import (
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
)

// TestExpireReplicas: finished replicas are deleted a retention after
// their job finished, earliest first whatever order they were stored in;
// unfinished replicas are never deleted, and the index rebuilt at start
// queues the finished ones again.
func TestExpireReplicas(t *testing.T) {
	nodes := startNodes(t, 2)
	n, m := nodes[0], nodes[1]
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	store := func(id string, finished time.Duration) {
		r := testRecord(t, id, m)
		if finished >= 0 {
			r.State, r.Finished = market.JobSucceeded, t0.Add(finished)
		}
		rep := n.storeReplicas(m.ID().String(), []jobReplicaMsg{{Record: r, Replicas: []string{n.ID().String(), m.ID().String()}}})
		if rep.Stored != 1 {
			t.Fatalf("store %s: %+v", id, rep)
		}
	}
	store("j-late", 2*time.Hour)
	store("j-early", time.Hour)
	store("j-open", -1)
	has := func(id string) bool {
		_, ok, err := n.replicas.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, step := range []struct {
		at      time.Duration
		deleted int
		left    []string
	}{
		{time.Hour + 59*time.Minute, 0, []string{"j-late", "j-early", "j-open"}},
		{2 * time.Hour, 1, []string{"j-late", "j-open"}},
		{3 * time.Hour, 1, []string{"j-open"}},
		{100 * time.Hour, 0, []string{"j-open"}},
	} {
		if got := n.expireReplicas(t0.Add(step.at), time.Hour); got != step.deleted {
			t.Fatalf("at %v: %d deleted, want %d", step.at, got, step.deleted)
		}
		for _, id := range step.left {
			if !has(id) {
				t.Fatalf("at %v: %s deleted", step.at, id)
			}
		}
	}
	if has("j-late") || has("j-early") {
		t.Fatal("an expired replica is still stored")
	}
	// Rebuilt at start: a finished replica stored before is queued again.
	store("j-again", 0)
	n.fo.mu.Lock()
	n.fo.done = nil
	n.fo.mu.Unlock()
	if err := n.loadReplicaIndex(); err != nil {
		t.Fatal(err)
	}
	if got := n.expireReplicas(t0.Add(time.Hour), time.Hour); got != 1 || has("j-again") || !has("j-open") {
		t.Fatalf("after the index was rebuilt: %d deleted; j-again kept %v, j-open kept %v", got, has("j-again"), has("j-open"))
	}
}
