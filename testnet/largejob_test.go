package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestLargeJobRecord: a job of spec.MaxJobReplicas replicas, whose
// finished record (about 750 KB) is over a plain store value's limit, is
// stored by its manager and by its replica peers: with the manager killed
// a peer answers for it with every replica, and the manager restarted on
// its data dir restores it.
func TestLargeJobRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,000 processes")
	}
	net := New(t, 3, Options{Resources: func(int) string { return bigNode }})
	net.WaitConverged(10 * time.Second)
	var tasks []string
	for i := range 4 {
		tasks = append(tasks, fmt.Sprintf(`{"name": "t%d", "command": ["true"], "replicas": 250, "resources": {"cpu": "10m"}}`, i))
	}
	mgr := net.Node(0)
	id, err := mgr.Submit(`{"name": "wide", "tasks": [` + strings.Join(tasks, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 processes on three nodes: about 30 s alone, 60-85 s under the
	// race detector on a loaded 2-core machine, and once over 3 min in CI
	// beside the simulator's tests; the bound is liveness, not a
	// performance target.
	if s := waitJob(t, mgr, id, 6*time.Minute); s.State != "succeeded" || len(s.Tasks) != 1000 {
		t.Fatalf("job %s with %d replicas", s.State, len(s.Tasks))
	}
	// Replication runs every 200 ms: wait until a peer holds the
	// finished record.
	waitfor.Cond(t, 10*time.Second, "a replica of the finished record", func() bool {
		for _, nd := range net.Up()[1:] {
			if r, ok := nd.ReplicaRecord(id); ok && r.State == "succeeded" {
				return true
			}
		}
		return false
	})
	net.Kill(0)
	// Replicas answer once their view has lost the manager.
	waitfor.Cond(t, 20*time.Second, "a peer to answer for the job", func() bool {
		s, err := net.Node(1).Status(id)
		return err == nil && s.State == "succeeded" && len(s.Tasks) == 1000
	})
	restarted := net.Restart(0)
	if r, ok := restarted.JobRecord(id); !ok || r.State != "succeeded" || len(r.Tasks) != 1000 {
		t.Fatalf("restarted manager: found %v, %s, %d replicas", ok, r.State, len(r.Tasks))
	}
}
