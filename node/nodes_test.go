package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// startNodes starts n nodes on loopback, each bootstrapping from the
// first, and waits until every one sees all the others.
func startNodes(t testing.TB, count int) []*Node {
	t.Helper()
	var nodes []*Node
	for i := 0; i < count; i++ {
		cfg := Config{DataDir: filepath.Join(t.TempDir(), "data"), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
			API: "127.0.0.1:0", AdvertInterval: 100 * time.Millisecond, DisableNVML: true}
		if i > 0 {
			for _, a := range nodes[0].Addrs() {
				cfg.Bootstrap = append(cfg.Bootstrap, a.String())
			}
		}
		n, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Kill)
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		waitfor.Cond(t, 15*time.Second, fmt.Sprintf("node %s to see %d peers", n.ID(), count-1), func() bool { return len(n.Peers()) >= count-1 })
	}
	return nodes
}

// submitOnLoop submits the job spec text straight to n's market, on its
// loop (no replication wait), and returns the job's ID.
func submitOnLoop(t testing.TB, n *Node, text string) string {
	t.Helper()
	js, err := spec.Parse([]byte(text), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	id := newJobID()
	var serr error
	if err := n.call(func() { serr = n.mkt.Submit(time.Now(), id, *js) }); err != nil || serr != nil {
		t.Fatalf("submit: %v %v", err, serr)
	}
	return id
}
