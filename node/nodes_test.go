package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

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
