package testnet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

const gpuYAML = `cpu: 16
memory: 64GiB
gpus:
  - {model: A100, memory: 40GiB}
  - {model: A100, memory: 40GiB}
`

func resourcesABC(i int) string {
	switch i {
	case 0:
		return "cpu: 4\nmemory: 8GiB\ngpus: []\n"
	case 1:
		return gpuYAML
	default:
		return "cpu: 8\nmemory: 16GiB\ngpus: []\n"
	}
}

func peersOf(nd *Node) map[peer.ID]api.PeerResponse {
	out := map[peer.ID]api.PeerResponse{}
	for _, m := range nd.Peers() {
		out[m.Advert.Peer] = api.PeerView(m)
	}
	return out
}

// TestChainMembership: B bootstraps from A, C only from B; every node
// learns the other two with the resource vectors of their files.
func TestChainMembership(t *testing.T) {
	net := New(t, 3, Options{Resources: resourcesABC})
	net.WaitConverged(10 * time.Second)
	wantCPU := map[int]int64{0: 4000, 1: 16000, 2: 8000}
	for i := 0; i < 3; i++ {
		ps := peersOf(net.Node(i))
		for j := 0; j < 3; j++ {
			if i == j {
				continue
			}
			p, ok := ps[net.Node(j).ID()]
			if !ok {
				t.Fatalf("node %d does not list node %d", i, j)
			}
			if p.Capacity.CPU != wantCPU[j] {
				t.Fatalf("node %d sees node %d with %d millicores, want %d", i, j, p.Capacity.CPU, wantCPU[j])
			}
			wantGPUs := 0
			if j == 1 {
				wantGPUs = 2
			}
			if len(p.Capacity.GPUs) != wantGPUs {
				t.Fatalf("node %d sees node %d with %d GPUs, want %d", i, j, len(p.Capacity.GPUs), wantGPUs)
			}
			if j == 1 && (p.Capacity.GPUs[0].Model != "A100" || p.Capacity.GPUs[0].Memory != 40<<30) {
				t.Fatalf("GPU of node 1 seen as %+v", p.Capacity.GPUs[0])
			}
		}
	}
}

// TestKillAndRestart: a killed node leaves every view within 4 advert
// intervals; restarted on its data dir it returns with the same peer ID.
func TestKillAndRestart(t *testing.T) {
	net := New(t, 3, Options{Resources: resourcesABC, Topology: Star})
	net.WaitConverged(10 * time.Second)
	victim := net.Node(2)
	id := victim.ID()
	net.Kill(2)
	killed := time.Now()
	waitfor.Cond(t, 4*DefaultInterval+DefaultInterval/2, "killed node to leave the views", func() bool {
		for _, nd := range net.Up() {
			if _, ok := peersOf(nd)[id]; ok {
				return false
			}
		}
		return true
	})
	t.Logf("killed node dropped after %v (interval %v)", time.Since(killed), DefaultInterval)
	back := net.Restart(2)
	if back.ID() != id {
		t.Fatalf("restarted node has peer ID %s, want %s", back.ID(), id)
	}
	net.WaitConverged(10 * time.Second)
}

// TestGracefulLeave: a gracefully stopped node is dropped at once.
func TestGracefulLeave(t *testing.T) {
	net := New(t, 3, Options{Topology: Star, Interval: time.Second})
	net.WaitConverged(10 * time.Second)
	id := net.Node(1).ID()
	net.Stop(1)
	waitfor.Cond(t, 900*time.Millisecond, "stopped node to leave the views", func() bool {
		for _, nd := range net.Up() {
			if _, ok := peersOf(nd)[id]; ok {
				return false
			}
		}
		return true
	})
}

func writeKey(t *testing.T, hexKey string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "swarm.key")
	if err := os.WriteFile(p, []byte("/key/swarm/psk/1.0.0/\n/base16/\n"+hexKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSwarmKey: nodes 0 and 1 share a key; node 2 has another key and
// node 3 none. Neither outsider ever appears in the keyed nodes' views.
func TestSwarmKey(t *testing.T) {
	k1 := writeKey(t, "1111111111111111111111111111111111111111111111111111111111111111")
	k2 := writeKey(t, "2222222222222222222222222222222222222222222222222222222222222222")
	net := New(t, 4, Options{Topology: Star, Configure: func(i int, c *node.Config) {
		switch i {
		case 0, 1:
			c.SwarmKeyFile = k1
		case 2:
			c.SwarmKeyFile = k2
		}
	}})
	waitfor.Cond(t, 10*time.Second, "keyed nodes to see each other", func() bool {
		_, ok := peersOf(net.Node(0))[net.Node(1).ID()]
		return ok
	})
	time.Sleep(4 * DefaultInterval) // give outsiders every chance to leak in
	for _, i := range []int{0, 1} {
		ps := peersOf(net.Node(i))
		for _, j := range []int{2, 3} {
			if _, ok := ps[net.Node(j).ID()]; ok {
				t.Fatalf("keyed node %d lists outsider %d", i, j)
			}
		}
	}
	for _, j := range []int{2, 3} {
		if len(net.Node(j).Peers()) != 0 {
			t.Fatalf("outsider %d has peers %v", j, net.Node(j).Peers())
		}
	}
}

// TestLoopbackOnly: every connection of every node is to 127.0.0.0/8.
func TestLoopbackOnly(t *testing.T) {
	net := New(t, 3, Options{})
	net.WaitConverged(10 * time.Second)
	for _, nd := range net.Up() {
		for _, c := range nd.Host().Network().Conns() {
			if !manet.IsIPLoopback(c.RemoteMultiaddr()) || !manet.IsIPLoopback(c.LocalMultiaddr()) {
				t.Fatalf("node %d has a non-loopback connection %s -> %s", nd.Index, c.LocalMultiaddr(), c.RemoteMultiaddr())
			}
		}
		for _, a := range nd.Host().Addrs() {
			if !manet.IsIPLoopback(a) {
				t.Fatalf("node %d listens on %s", nd.Index, a)
			}
		}
	}
}
