package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestForgedClaims: an admitted node gone bad (the intruder, which every
// node takes for one of the peers closest to every job in networks this
// small) claims each job of node 0 while the jobs run: a claim of a
// success without proof, one with a proof it signed itself, one with a
// proof the job's executor signed for node 0, and one it could make
// honestly (pending, taken over), which ranks below the manager's. No job
// changes manager, every forged claim is refused and counted by reason,
// its job's event log says why, and every job succeeds where it was
// submitted. In networks of 3 and 7 nodes.
func TestForgedClaims(t *testing.T) {
	for _, n := range []int{3, 7} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { forgedClaims(t, n) })
	}
}

func forgedClaims(t *testing.T, n int) {
	x := NewAuthority(t)
	net := New(t, n, Options{Topology: Star, Resources: func(i int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" },
		Configure: func(i int, c *node.Config) { x.Admit(c, "lab") }})
	ops := x.User("ops", true, auth.NoQuota)
	a := net.Node(0)
	a.SetCredential(&ops)
	waitfor.Cond(t, 20*time.Second, "node 0 to see every peer", func() bool { return len(a.Peers()) >= n-1 })
	in := newIntruder(t, x)
	for i := range n {
		in.connect(net.Node(i))
	}
	var jobs []string
	for i := range 5 {
		id, err := a.Submit(fmt.Sprintf(`{"name": "j%d", "tasks": [{"name": "t", "command": ["sleep", "6"], "retries": 0, "resources": {"cpu": "1"}}]}`, i))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, id)
	}
	self := market.NodeID(a.ID().String())
	recs := map[string]market.JobRecord{}
	waitfor.Cond(t, 20*time.Second, "every job to run", func() bool {
		for _, id := range jobs {
			rec, ok := a.JobRecord(id)
			if !ok || rec.Tasks[0].State != market.TaskRunning || (rec.Tasks[0].Node != self && len(rec.Tasks[0].Proof) == 0) {
				return false
			}
			recs[id] = rec
		}
		return true
	})
	key := in.h.Peerstore().PrivKey(in.h.ID())
	forged := 0
	for _, id := range jobs {
		rec := recs[id]
		tk := rec.Tasks[0]
		won := market.ClaimRank{State: market.JobSucceeded, Succeeded: 1, TakenFrom: self}
		own, err := key.Sign(market.ProofBytes(tk.Key, tk.Epoch, true, in.id()))
		if err != nil {
			t.Fatal(err)
		}
		claims := []market.Msg{
			market.ManagerClaim{Job: id, From: in.id(), Rank: market.ClaimRank{State: market.JobSucceeded, Succeeded: 1}},
			market.ManagerClaim{Job: id, From: in.id(), Rank: won, Proofs: []market.TaskProof{{Key: tk.Key, Epoch: tk.Epoch, Node: in.id(), Succeeded: true, Sig: own}}},
		}
		if tk.Node != self {
			// The executor's proof that it runs the task for node 0.
			claims = append(claims, market.ManagerClaim{Job: id, From: in.id(), Rank: market.ClaimRank{State: market.JobRunning, Running: 1, TakenFrom: self},
				Proofs: []market.TaskProof{{Key: tk.Key, Epoch: tk.Epoch, Node: tk.Node, Sig: tk.Proof}}})
		}
		forged += len(claims)
		claims = append(claims, market.ManagerClaim{Job: id, From: in.id(), Rank: market.ClaimRank{State: market.JobPending, TakenFrom: self}})
		if err := in.send(a, claims...); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Cond(t, 10*time.Second, "every forged claim to be refused", func() bool {
		return scrape(t, a)[fmt.Sprintf(`agora_refused_total{reason=%q}`, market.RefuseClaimProof)] >= float64(forged)
	})
	for _, id := range jobs {
		st := waitJob(t, a, id, 30*time.Second)
		if st.State != "succeeded" {
			t.Fatalf("job %s ended %s: %s", id, st.State, st.Reason)
		}
		if rec, ok := a.JobRecord(id); !ok || rec.Manager != self {
			t.Fatalf("job %s: managed here %v, manager %s", id, ok, rec.Manager)
		}
		if ev := strings.Join(a.Events(id), "\n"); !strings.Contains(ev, "claim to manage job "+id+" from "+string(in.id())+" refused") {
			t.Fatalf("job %s's events say nothing of the refused claims:\n%s", id, ev)
		}
		for i := 1; i < n; i++ {
			if _, ok := net.Node(i).JobRecord(id); ok {
				t.Fatalf("node %d manages job %s", i, id)
			}
		}
	}
}
