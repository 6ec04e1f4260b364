package testnet

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/node/api"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestIslands (issue 25, done-when 3): a site of two nodes is cut off from
// the three others for 60 s while 100 tasks are submitted, half on each
// side. Each side keeps scheduling among its own nodes — the cut-off
// side's jobs run there during the cut — and once the cut heals every
// task has succeeded exactly once and every node reports the same state
// and node for every job.
func TestIslands(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s partition")
	}
	two := func(int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" }
	net := New(t, 5, Options{Resources: two, Topology: Star})
	net.WaitConverged(20 * time.Second)
	main, island := []int{0, 1, 2}, []int{3, 4}
	side := map[string]string{}
	for _, i := range main {
		side[net.Node(i).ID().String()] = "main"
	}
	for _, i := range island {
		side[net.Node(i).ID().String()] = "island"
	}
	for _, i := range main {
		for _, j := range island {
			net.Partition(i, j)
		}
	}
	cut := time.Now()
	sees := func(i int, others []int) bool {
		seen := map[peer.ID]bool{}
		for _, m := range net.Node(i).Peers() {
			seen[m.Advert.Peer] = true
		}
		for _, j := range others {
			if seen[net.Node(j).ID()] {
				return true
			}
		}
		return false
	}
	waitfor.Cond(t, 15*time.Second, "each side to drop the other from its view", func() bool {
		for _, i := range main {
			if sees(i, island) {
				return false
			}
		}
		for _, i := range island {
			if sees(i, main) {
				return false
			}
		}
		return true
	})
	type job struct {
		id, side string
		manager  int
	}
	var jobs []job
	for k := 0; k < 100; k++ {
		mgr := main[k%len(main)]
		s := "main"
		if k%2 == 1 {
			mgr, s = island[k%len(island)], "island"
		}
		id, err := net.Node(mgr).Submit(fmt.Sprintf(`{"name": "isl-%03d", "tasks": [{"name": "t", "command": ["sleep", "0.3"], "resources": {"cpu": 1}}]}`, k))
		if err != nil {
			t.Fatalf("submit %d on node %d: %v", k, mgr, err)
		}
		jobs = append(jobs, job{id: id, side: s, manager: mgr})
	}
	// Both sides finish their own jobs during the cut, on their own nodes.
	waitfor.Cond(t, 45*time.Second, "every job to succeed on its own side during the cut", func() bool {
		for _, j := range jobs {
			st, err := net.Node(j.manager).Status(j.id)
			if err != nil || st.State != "succeeded" {
				return false
			}
			if where := side[st.Tasks[0].Node]; where != j.side {
				t.Fatalf("job %s submitted on the %s side ran on the %s side during the cut", j.id, j.side, where)
			}
		}
		return true
	})
	t.Logf("all 100 jobs succeeded on their own sides %v into the cut", time.Since(cut).Round(time.Millisecond))
	if d := 60*time.Second - time.Since(cut); d > 0 {
		time.Sleep(d)
	}
	for _, i := range main {
		for _, j := range island {
			net.Heal(i, j)
		}
	}
	healed := time.Now()
	// the island rejoins by dialling its bootstrap peer again (node 0):
	// seconds, not a DHT refresh's minutes
	net.WaitConverged(20 * time.Second)
	t.Logf("views whole again %v after the heal", time.Since(healed).Round(time.Millisecond))
	// Every node answers the same for every job: state, node, one success.
	waitfor.Cond(t, 60*time.Second, "every node to agree on every job", func() bool {
		for _, j := range jobs {
			want, err := net.Node(j.manager).Status(j.id)
			if err != nil {
				return false
			}
			for i := range 5 {
				got, err := net.Node(i).Status(j.id)
				if err != nil || got.State != want.State || len(got.Tasks) != 1 || got.Tasks[0].Node != want.Tasks[0].Node {
					return false
				}
			}
		}
		return true
	})
	for _, j := range jobs {
		oneSuccess(t, net.Node(j.manager), j.id)
	}
	// Every node's job list (`agora jobs`: the jobs it manages) holds its
	// own jobs, succeeded, and no job is listed by two nodes: no side
	// adopted the other's jobs during the cut.
	listedBy := map[string]int{}
	for i := range 5 {
		code, b, err := net.Node(i).API("GET", "/v1/jobs", nil)
		var list []api.JobStatus
		if err != nil || code != 200 || json.Unmarshal(b, &list) != nil {
			t.Fatalf("node %d: jobs: %d %v %s", i, code, err, b)
		}
		for _, js := range list {
			if prev, dup := listedBy[js.ID]; dup {
				t.Fatalf("job %s is listed by nodes %d and %d", js.ID, prev, i)
			}
			listedBy[js.ID] = i
			if js.State != "succeeded" {
				t.Fatalf("node %d lists job %s as %s", i, js.ID, js.State)
			}
		}
	}
	for _, j := range jobs {
		if i, ok := listedBy[j.id]; !ok || i != j.manager {
			t.Fatalf("job %s (managed by node %d) listed by node %d (%v)", j.id, j.manager, i, ok)
		}
	}
	t.Logf("after the heal every node agrees on all 100 jobs, each succeeded once and is listed by its manager alone")
}

// TestRestartWhileCutOff (issue 25, done-when 4): an edge node running its
// own job is cut off from the rest, killed and restarted while still cut
// off; it restarts its work, the job succeeds, and once the cut heals
// the other nodes see it succeeded, once.
func TestRestartWhileCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("a partition and a restart")
	}
	two := func(int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" }
	net := New(t, 4, Options{Resources: two, Topology: Star})
	net.WaitConverged(20 * time.Second)
	const edge = 3
	for i := 0; i < edge; i++ {
		net.Partition(i, edge)
	}
	id, err := net.Node(edge).Submit(fmt.Sprintf(`{"name": "edge-work", "tasks": [{"name": "t", "command": ["sh", "-c", "sleep 3; echo edge-done"], "resources": {"cpu": 1, "site": "site-%d"}}]}`, edge))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 15*time.Second, "the edge's task to run", func() bool {
		st, err := net.Node(edge).Status(id)
		return err == nil && st.Tasks[0].State == "running"
	})
	net.Kill(edge)
	net.Restart(edge) // the others' gaters still refuse it: the cut holds
	restarted := time.Now()
	waitfor.Cond(t, 30*time.Second, "the restarted edge to finish its job while cut off", func() bool {
		st, err := net.Node(edge).Status(id)
		return err == nil && st.State == "succeeded"
	})
	t.Logf("the restarted edge finished its job %v after the restart, still cut off", time.Since(restarted).Round(time.Millisecond))
	for i := 0; i < edge; i++ {
		if _, err := net.Node(i).Status(id); err == nil {
			t.Fatalf("node %d reached the edge's job during the cut", i)
		}
	}
	for i := 0; i < edge; i++ {
		net.Heal(i, edge)
	}
	net.WaitConverged(20 * time.Second)
	waitfor.Cond(t, 20*time.Second, "the other nodes to see the job succeeded", func() bool {
		for i := 0; i < edge; i++ {
			st, err := net.Node(i).Status(id)
			if err != nil || st.State != "succeeded" {
				return false
			}
		}
		return true
	})
	t.Logf("after the heal the others see it succeeded; history: %s", oneSuccess(t, net.Node(edge), id))
}

// TestRestartWhileCutOffCopied is TestRestartWhileCutOff with the job
// submitted before the cut, so the other side holds copies of its record
// and the closest holder takes the job over when the edge leaves its
// view; it finds no node on the edge's site and fails the job there.
// After the heal the two managers settle on the edge's record, which ran
// the task (market/split.go): every node answers it, succeeded, and the
// edge alone lists the job.
func TestRestartWhileCutOffCopied(t *testing.T) {
	if testing.Short() {
		t.Skip("a partition and a restart")
	}
	two := func(int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" }
	net := New(t, 4, Options{Resources: two, Topology: Star})
	net.WaitConverged(20 * time.Second)
	const edge = 3
	id, err := net.Node(edge).Submit(fmt.Sprintf(`{"name": "edge-work", "pending_timeout": "10s", "tasks": [{"name": "t", "command": ["sh", "-c", "sleep 4; echo edge-done"], "resources": {"cpu": 1, "site": "site-%d"}}]}`, edge))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 15*time.Second, "the edge's task to run", func() bool {
		st, err := net.Node(edge).Status(id)
		return err == nil && st.Tasks[0].State == "running"
	})
	waitfor.Cond(t, 10*time.Second, "a copy of the running record on another node", func() bool {
		for i := 0; i < edge; i++ {
			if c, ok := net.Node(i).ReplicaRecord(id); ok && c.Tasks[0].State == "running" {
				return true
			}
		}
		return false
	})
	for i := 0; i < edge; i++ {
		net.Partition(i, edge)
	}
	net.Kill(edge)
	net.Restart(edge)
	restarted := time.Now()
	waitfor.Cond(t, 40*time.Second, "the restarted edge to finish its job while cut off", func() bool {
		st, err := net.Node(edge).Status(id)
		return err == nil && st.State == "succeeded"
	})
	t.Logf("the restarted edge finished its job %v after the restart, still cut off", time.Since(restarted).Round(time.Millisecond))
	adopter := -1
	waitfor.Cond(t, 30*time.Second, "the other side to take the job over and fail it (no node on the edge's site)", func() bool {
		for i := 0; i < edge; i++ {
			if rec, ok := net.Node(i).JobRecord(id); ok && rec.State == "failed" {
				adopter = i
				return true
			}
		}
		return false
	})
	for i := 0; i < edge; i++ {
		net.Heal(i, edge)
	}
	net.WaitConverged(20 * time.Second)
	healed := time.Now()
	waitfor.Cond(t, 30*time.Second, "every node to answer the edge's record, succeeded", func() bool {
		for i := 0; i <= edge; i++ {
			st, err := net.Node(i).Status(id)
			if err != nil || st.State != "succeeded" || st.Tasks[0].Node != net.Node(edge).ID().String() {
				return false
			}
		}
		return true
	})
	t.Logf("node %d took the job over during the cut and failed it; %v after the heal every node answers succeeded on the edge", adopter, time.Since(healed).Round(time.Millisecond))
	for i := 0; i < edge; i++ {
		if _, ok := net.Node(i).JobRecord(id); ok {
			t.Fatalf("node %d still manages the job after the heal", i)
		}
	}
	t.Logf("history: %s", oneSuccess(t, net.Node(edge), id))
}
