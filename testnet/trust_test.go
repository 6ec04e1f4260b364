package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// trustNet starts A and B admitted by authority x, S admitted by another
// authority y, and T with no certificate; S and T bootstrap to A.
func trustNet(t *testing.T) (*Net, *Authority) {
	x, y := NewAuthority(t), NewAuthority(t)
	net := New(t, 4, Options{Topology: Star, Resources: func(i int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" },
		Configure: func(i int, c *node.Config) {
			switch i {
			case 0:
				x.Admit(c, "lab")
				c.Labels = map[string]string{"only": "a"}
			case 1:
				x.Admit(c, "lab")
			case 2:
				y.Admit(c, "lab")
				c.Market.SchedulingTimeout = 3 * time.Second
			}
		}})
	ops, other := x.User("ops", true, auth.NoQuota), y.User("ops", true, auth.NoQuota)
	net.Node(0).SetCredential(&ops)
	net.Node(1).SetCredential(&ops)
	net.Node(2).SetCredential(&other)
	return net, x
}

// TestForeignNodesStayOut: S (another authority) and T (no certificate)
// never enter A's or B's view; a job on S that only A could hold fails
// with no bidder; no task of S or T runs on A or B, and none of A's or
// B's runs on S or T. Each refusal is counted on /metrics by reason.
func TestForeignNodesStayOut(t *testing.T) {
	net, _ := trustNet(t)
	a, b, s, tt := net.Node(0), net.Node(1), net.Node(2), net.Node(3)
	waitfor.Cond(t, 10*time.Second, "A and B to see each other", func() bool {
		return has(a.Peers(), b) && has(b.Peers(), a)
	})
	// Give S and T the time the issue allows to get in.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range []*Node{a, b} {
			for _, out := range []*Node{s, tt} {
				if has(nd.Peers(), out) {
					t.Fatalf("node %d has node %d in its view", nd.Index, out.Index)
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	job := func(name, label string) string {
		req := `"resources": {"cpu": "500m"}`
		if label != "" {
			req = fmt.Sprintf(`"resources": {"cpu": "500m", "labels": {"only": %q}}`, label)
		}
		return fmt.Sprintf(`{"name": %q, "tasks": [{"name": "t", "replicas": 4, "command": ["true"], %s}]}`, name, req)
	}
	onlyA, err := s.Submit(job("only-a", "a"))
	if err != nil {
		t.Fatal(err)
	}
	var ids = map[*Node]string{}
	for _, nd := range []*Node{a, b, s, tt} {
		if ids[nd], err = nd.Submit(job(fmt.Sprintf("from-%d", nd.Index), "")); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Cond(t, 20*time.Second, "every job to end", func() bool {
		for nd, id := range ids {
			if st, err := nd.Status(id); err != nil || st.State != "succeeded" {
				return false
			}
		}
		st, err := s.Status(onlyA)
		return err == nil && st.State == "failed"
	})
	if st, _ := s.Status(onlyA); !strings.Contains(st.Reason, "cannot be scheduled") {
		t.Fatalf("only-a failed for another reason than no bidder: %s", st.Reason)
	}
	inside := map[int]bool{0: true, 1: true}
	for nd, id := range ids {
		for _, runner := range []*Node{a, b, s, tt} {
			exs, err := runner.Executions(id)
			if err != nil {
				t.Fatal(err)
			}
			if len(exs) > 0 && inside[nd.Index] != inside[runner.Index] {
				t.Fatalf("a task of node %d's job ran on node %d", nd.Index, runner.Index)
			}
		}
	}
	for _, nd := range []*Node{a, b} {
		if exs, _ := nd.Executions(onlyA); len(exs) > 0 {
			t.Fatalf("S's job ran on node %d", nd.Index)
		}
	}
	m := scrape(t, a)
	if m[`agora_refused_total{reason="bad_certificate"}`] == 0 || m[`agora_refused_total{reason="no_certificate"}`] == 0 {
		t.Fatalf("refusals not counted on A: %v", m)
	}
}

// has reports whether nd is among peers.
func has(peers []gossip.Member, nd *Node) bool {
	for _, p := range peers {
		if p.Advert.Peer == nd.ID() {
			return true
		}
	}
	return false
}

// TestRevokedNodeDropped: A, B and C are admitted; B runs a task of a job
// A manages. The authority's revocation of B, handed to A, reaches C;
// within 10 s A and C have dropped B, B's task is placed again on A or C,
// and no later work goes to B.
func TestRevokedNodeDropped(t *testing.T) {
	x := NewAuthority(t)
	labels := []string{"a", "b", "c"}
	net := New(t, 3, Options{Topology: Star, Resources: func(i int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" },
		Configure: func(i int, c *node.Config) {
			x.Admit(c, "lab")
			c.Labels = map[string]string{"n": labels[i]}
		}})
	ops := x.User("ops", true, auth.NoQuota)
	a, b, c := net.Node(0), net.Node(1), net.Node(2)
	for _, nd := range []*Node{a, b, c} {
		nd.SetCredential(&ops)
	}
	waitfor.Cond(t, 10*time.Second, "every node to see the others", func() bool {
		return has(a.Peers(), b) && has(a.Peers(), c) && has(c.Peers(), b)
	})
	// Fill A and C for a few seconds, so that the next job can only go
	// to B.
	fill := map[*Node]string{}
	for _, nd := range []*Node{a, c} {
		l := labels[nd.Index]
		id, err := a.Submit(fmt.Sprintf(`{"name": "fill-%s", "tasks": [{"name": "t", "command": ["sleep", "3"], "resources": {"cpu": "2", "labels": {"n": %q}}}]}`, l, l))
		if err != nil {
			t.Fatal(err)
		}
		fill[nd] = id
	}
	waitfor.Cond(t, 10*time.Second, "the fillers to run", func() bool {
		for nd, id := range fill {
			if exs, _ := nd.Executions(id); len(exs) == 0 {
				return false
			}
		}
		return true
	})
	job, err := a.Submit(`{"name": "long", "tasks": [{"name": "t", "command": ["sleep", "8"], "resources": {"cpu": "2"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 10*time.Second, "the job to run on B", func() bool {
		exs, _ := b.Executions(job)
		return len(exs) > 0 && exs[0].Finished.IsZero()
	})

	rev := x.Revocation(b.ID().String())
	if code, body, err := a.API("POST", "/v1/revocations", rev.Encode()); err != nil || code != 200 {
		t.Fatalf("revoke through A: %d %s %v", code, body, err)
	}
	revoked := time.Now()
	waitfor.Cond(t, 10*time.Second, "A and C to drop B", func() bool {
		return !has(a.Peers(), b) && !has(c.Peers(), b)
	})
	t.Logf("B dropped after %v", time.Since(revoked))
	waitfor.Cond(t, 15*time.Second, "B's task to run again on A or C", func() bool {
		for _, nd := range []*Node{a, c} {
			if exs, _ := nd.Executions(job); len(exs) > 0 {
				return true
			}
		}
		return false
	})
	t.Logf("task placed again after %v", time.Since(revoked))
	after, err := a.Submit(`{"name": "after", "tasks": [{"name": "t", "replicas": 3, "command": ["true"], "resources": {"cpu": "500m"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logEvents(t, net, job)
			logEvents(t, net, after)
		}
	})
	waitfor.Cond(t, 30*time.Second, "both jobs to succeed", func() bool {
		s1, err1 := a.Status(job)
		s2, err2 := a.Status(after)
		return err1 == nil && err2 == nil && s1.State == "succeeded" && s2.State == "succeeded"
	})
	if exs, _ := b.Executions(after); len(exs) > 0 {
		t.Fatal("work submitted after B's revocation ran on B")
	}
}
