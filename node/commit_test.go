package node

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestSyncEffectsWaitsForCommits: job records a burst of turns handed to
// the committer are in the store once syncEffects returns (the submit
// call itself returns before its turn's records are even handed over).
func TestSyncEffectsWaitsForCommits(t *testing.T) {
	n := startNodes(t, 1)[0]
	var ids []string
	for i := range 20 {
		ids = append(ids, submitOnLoop(t, n, fmt.Sprintf(`{"name": "burst-%d", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "100m"}}]}`, i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.syncEffects(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		j, ok, err := n.jobs.Get(id)
		if err != nil || !ok || j.ID != id {
			t.Fatalf("job %s not in the store after syncEffects: %v %v", id, ok, err)
		}
	}
}
