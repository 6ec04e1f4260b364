package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/netns"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestIslandsBehindNAT (issue 25, done-when 3, in namespaces): a site of
// two edge nodes behind one NAT is cut off from three public nodes for
// 60 s (its router drops everything) while 100 one-task jobs are
// submitted, half on each side. Each side runs its own during the cut;
// after the cut every node answers the same for every job, each job is
// listed by its manager alone, and every one succeeded.
func TestIslandsBehindNAT(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s cut")
	}
	is := startIsland(t)
	all, public, island, ids := is.all, is.public, is.edges, is.ids
	side := map[string]string{}
	for _, nd := range public {
		side[ids[nd]] = "public"
	}
	for _, nd := range island {
		side[ids[nd]] = "island"
	}
	dump := func() { is.dump(t) }
	sees, whole := is.sees, is.whole
	start := time.Now()
	waitfor.Every(t, 60*time.Second, apiPoll, "all five nodes to see each other", whole)
	t.Logf("five nodes whole %v after start", time.Since(start).Round(time.Millisecond))
	is.net.Cut(is.router)
	cut := time.Now()
	waitfor.Every(t, 20*time.Second, apiPoll, "each side to drop the other from its view", func() bool {
		for _, nd := range public {
			if sees(nd, island) != 0 {
				return false
			}
		}
		for _, nd := range island {
			if sees(nd, public) != 0 {
				return false
			}
		}
		return true
	})
	type job struct {
		id, side string
		mgr      *nsNode
	}
	var jobs []job
	dir := t.TempDir()
	for k := 0; k < 100; k++ {
		mgr, sd := public[k%3], "public"
		if k%2 == 1 {
			mgr, sd = island[k%2], "island"
		}
		f := filepath.Join(dir, fmt.Sprintf("j%03d.yaml", k))
		if err := os.WriteFile(f, []byte(fmt.Sprintf("name: isl-%03d\ntasks:\n  - name: t\n    command: \"sleep 0.3\"\n    resources: {cpu: 0.5}\n", k)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code := mgr.agora("submit", "--json", f)
		if code != 0 {
			dump()
			t.Fatalf("submit %d on %s: %s %s", k, mgr.ns, out, errs)
		}
		jobs = append(jobs, job{id: jobID(out), side: sd, mgr: mgr})
	}
	status := func(nd *nsNode, id string) (jobStatus, bool) {
		st, ok := nd.status(id)
		return st, ok && len(st.Tasks) == 1
	}
	waitfor.Every(t, 50*time.Second, apiPoll, "every job to succeed on its own side during the cut", func() bool {
		for _, j := range jobs {
			st, ok := status(j.mgr, j.id)
			if !ok || st.State != "succeeded" {
				return false
			}
			if where := side[st.Tasks[0].Node]; where != j.side {
				dump()
				t.Fatalf("job %s submitted on the %s side ran on the %s side during the cut", j.id, j.side, where)
			}
		}
		return true
	})
	t.Logf("all 100 jobs succeeded on their own sides %v into the cut", time.Since(cut).Round(time.Millisecond))
	if d := 60*time.Second - time.Since(cut); d > 0 {
		time.Sleep(d)
	}
	is.net.Mend(is.router)
	mended := time.Now()
	waitfor.Every(t, 40*time.Second, apiPoll, "the five nodes to see each other again", whole)
	t.Logf("views whole again %v after the cut ended", time.Since(mended).Round(time.Millisecond))
	waitfor.Every(t, 60*time.Second, apiPoll, "every node to answer the same for every job", func() bool {
		for _, j := range jobs {
			want, ok := status(j.mgr, j.id)
			if !ok {
				return false
			}
			for _, nd := range all {
				got, ok := status(nd, j.id)
				if !ok || got.State != want.State || got.Tasks[0].Node != want.Tasks[0].Node {
					return false
				}
			}
		}
		return true
	})
	listedBy := map[string]*nsNode{}
	for _, nd := range all {
		out, errs, code := nd.agora("jobs", "--json")
		var list []jobStatus
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("jobs on %s: %s %s", nd.ns, out, errs)
		}
		for _, js := range list {
			if prev := listedBy[js.ID]; prev != nil {
				t.Fatalf("job %s listed by %s and %s", js.ID, prev.ns, nd.ns)
			}
			listedBy[js.ID] = nd
			if js.State != "succeeded" {
				t.Fatalf("%s lists job %s as %s", nd.ns, js.ID, js.State)
			}
		}
	}
	retried := 0
	for _, j := range jobs {
		if listedBy[j.id] != j.mgr {
			t.Fatalf("job %s is not listed by its manager %s alone", j.id, j.mgr.ns)
		}
		if st, _ := status(j.mgr, j.id); st.Tasks[0].Attempts != 1 {
			retried++
		}
	}
	t.Logf("after the cut every node answers the same for all 100 jobs, each listed by its manager alone, all succeeded (%d needed a second attempt)", retried)
}

// TestEdgeRestartWhileCutOff (issue 25, done-when 4, in namespaces): an
// edge node runs its own job, pinned to it, when its site's router cuts
// it off; it is killed and started again while still cut off, restarts
// the job and finishes it there. Meanwhile a public node that held a copy
// of the job's record took the job over and failed it (no node on the
// edge's label). After the cut the two managers settle on the edge's
// record: every node answers succeeded on the edge, one attempt
// succeeded, and the edge alone lists the job.
func TestEdgeRestartWhileCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("a cut and a restart")
	}
	is := startIsland(t, "--label", "role=e1")
	all, public, ids := is.all, is.public, is.ids
	e1 := is.edges[0]
	// Whichever wait fails, the nodes' logs say why (a rare failure in
	// CI: the claim exchange after the mend took past its minute).
	t.Cleanup(func() {
		if t.Failed() {
			is.dump(t)
		}
	})
	whole := is.whole
	waitfor.Every(t, 60*time.Second, apiPoll, "all five nodes to see each other", whole)
	f := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(f, []byte("name: edge-work\ntasks:\n  - name: t\n    command: \"sleep 8; echo edge-done\"\n    resources: {cpu: 1, labels: {role: e1}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := e1.agora("submit", "--json", f)
	if code != 0 {
		t.Fatalf("submit on E1: %s %s", out, errs)
	}
	id := jobID(out)
	waitfor.Every(t, 20*time.Second, apiPoll, "the job to run on E1", func() bool {
		st, ok := e1.status(id)
		return ok && st.Tasks[0].State == "running"
	})
	time.Sleep(2 * time.Second) // the running record's copies reach the public nodes
	is.net.Cut(is.router)
	e1.restart()
	restarted := time.Now()
	waitfor.Every(t, 60*time.Second, apiPoll, "E1, restarted while cut off, to finish its job", func() bool {
		st, ok := e1.status(id)
		return ok && st.State == "succeeded"
	})
	t.Logf("E1, restarted while cut off, finished its job %v after the restart", time.Since(restarted).Round(time.Millisecond))
	during := map[string]string{}
	waitfor.Every(t, 30*time.Second, apiPoll, "a public node to take the job over meanwhile", func() bool {
		for _, nd := range public {
			if st, ok := nd.status(id); ok {
				during[nd.ns+nd.ip] = st.State + " managed by " + st.Manager
				return st.Manager != ids[e1]
			}
		}
		return false
	})
	t.Logf("during the cut the public side answers: %v", during)
	is.net.Mend(is.router)
	mended := time.Now()
	waitfor.Every(t, 40*time.Second, apiPoll, "the five nodes to see each other again", whole)
	waitfor.Every(t, 60*time.Second, apiPoll, "every node to answer E1's record: succeeded on E1", func() bool {
		for _, nd := range all {
			st, ok := nd.status(id)
			if !ok || st.State != "succeeded" || st.Tasks[0].Node != ids[e1] || st.Manager != ids[e1] {
				return false
			}
		}
		return true
	})
	t.Logf("%v after the cut ended every node answers E1's record, succeeded on E1", time.Since(mended).Round(time.Millisecond))
	for _, nd := range all {
		out, errs, code := nd.agora("jobs", "--json")
		var list []jobStatus
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("jobs on %s: %s %s", nd.ns, out, errs)
		}
		for _, js := range list {
			if js.ID == id && nd != e1 {
				t.Fatalf("%s (%s) still lists the job", nd.ns, ids[nd])
			}
		}
	}
	st, _ := e1.status(id)
	t.Logf("E1's record: %s on %s after %d attempts (%s); the public side's record is dropped, each node lists its own jobs only", st.Tasks[0].State, st.Tasks[0].Node, st.Tasks[0].Attempts, st.Tasks[0].Reason)
}

// island is three public nodes (a offering relay service, b and c
// bootstrapped to it) and a site of two edge nodes behind one NAT router,
// in namespaces the test made.
type island struct {
	net           *netns.Net
	router        string
	all           []*nsNode // a, b, c, e1, e2
	public, edges []*nsNode
	ids           map[*nsNode]string
}

// startIsland starts an island; e1Args go to the first edge node.
func startIsland(t *testing.T, e1Args ...string) *island {
	n := netns.New(t)
	s := n.Sites(0)
	edges, eaddrs := n.AddSite(&s, 2)
	a := startNS(t, n, s.Public, s.PublicAddr+":4001", "--relay-service")
	boot := fmt.Sprintf("/ip4/%s/tcp/4001/p2p/%s", s.PublicAddr, a.id().PeerID)
	b := startNS(t, n, s.Public, s.PublicAddr+":4002", "--bootstrap", boot)
	c := startNS(t, n, s.Public, s.PublicAddr+":4003", "--bootstrap", boot)
	e1 := startNS(t, n, edges[0], eaddrs[0], append([]string{"--nat-traversal", "--bootstrap", boot}, e1Args...)...)
	e2 := startNS(t, n, edges[1], eaddrs[1], "--nat-traversal", "--bootstrap", boot)
	is := &island{net: n, router: s.Routers[0], all: []*nsNode{a, b, c, e1, e2}, ids: map[*nsNode]string{}}
	is.public, is.edges = is.all[:3], is.all[3:]
	for _, nd := range is.all {
		is.ids[nd] = nd.id().PeerID
	}
	return is
}

// dump logs the tail of every node's output.
func (is *island) dump(t *testing.T) {
	for _, nd := range is.all {
		t.Logf("--- %s:\n%s", nd.ns, tail(nd.log.String(), 30))
	}
}

// sees is how many of others nd lists as peers; -1 when it does not
// answer.
func (is *island) sees(nd *nsNode, others []*nsNode) int {
	out, _, code := nd.agora("peers")
	if code != 0 {
		return -1
	}
	k := 0
	for _, o := range others {
		if strings.Contains(out, is.ids[o]) {
			k++
		}
	}
	return k
}

// whole reports whether every node lists the four others.
func (is *island) whole() bool {
	for _, nd := range is.all {
		if is.sees(nd, is.all) != len(is.all)-1 {
			return false
		}
	}
	return true
}
