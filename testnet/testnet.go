package testnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/node/executor"
	"github.com/agora-sched/agora/store"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// DefaultInterval is the advert interval of testnet nodes: short, so that
// membership converges within a test's patience.
const DefaultInterval = 250 * time.Millisecond

// Topology says whom each new node bootstraps from.
type Topology int

// Topologies.
const (
	Chain Topology = iota // node i bootstraps from node i-1 only
	Star                  // every node bootstraps from node 0
)

// Options shape a testnet.
type Options struct {
	// Interval is the advert interval (DefaultInterval when zero).
	Interval time.Duration
	// Topology picks bootstrap peers (Chain by default).
	Topology Topology
	// Resources, when set, returns the --resources YAML of node i ("" for
	// none).
	Resources func(i int) string
	// Configure, when set, may adjust node i's config before it starts.
	Configure func(i int, c *node.Config)
}

// Net is a running testnet.
type Net struct {
	t     testing.TB
	opts  Options
	ctx   context.Context
	base  string
	lat   latencies
	mu    sync.Mutex
	nodes []*Node
}

// Node is one testnet member. Its Node field is nil while it is down.
type Node struct {
	*node.Node
	Index  int
	Dir    string
	Config node.Config
	// self is the node's peer ID as a string once it first started (it
	// keeps its identity across restarts); the SendDelay hook reads it
	// from the node's goroutines, so it is not read through Node, which
	// the test goroutine sets and clears.
	self atomic.Value
	cred atomic.Value // *auth.Credential that API signs with
}

// New starts n nodes one after the other, each bootstrapping according to
// the topology, and stops them all when the test ends.
func New(t testing.TB, n int, opts Options) *Net {
	t.Helper()
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	// The base dir is made before the cleanup below is registered, so it is
	// removed after the nodes are stopped (cleanups run last-in first-out).
	base := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	net := &Net{t: t, opts: opts, ctx: ctx, base: base}
	t.Cleanup(func() {
		net.mu.Lock()
		nodes := append([]*Node(nil), net.nodes...)
		net.mu.Unlock()
		for _, nd := range nodes {
			if nd.Node != nil {
				nd.Kill()
			}
		}
		cancel()
	})
	for i := 0; i < n; i++ {
		net.Add()
	}
	return net
}

// Add starts one more node and returns it.
func (net *Net) Add() *Node {
	net.t.Helper()
	net.mu.Lock()
	i := len(net.nodes)
	net.mu.Unlock()
	dir, err := os.MkdirTemp(net.base, fmt.Sprintf("node%d-", i))
	if err != nil {
		net.t.Fatal(err)
	}
	cfg := node.Config{
		DataDir:        filepath.Join(dir, "data"),
		Listen:         []string{"/ip4/127.0.0.1/tcp/0"},
		API:            "127.0.0.1:0",
		AdvertInterval: net.opts.Interval,
		DisableNVML:    true,
		Site:           fmt.Sprintf("site-%d", i),
		// Scheduling tests must pass where cgroups are not writable;
		// where they are, this changes nothing (TestUnenforcedLimits
		// tests the default).
		Sandbox: executor.Sandbox{AllowUnenforcedLimits: true},
	}
	if net.opts.Resources != nil {
		if y := net.opts.Resources(i); y != "" {
			path := filepath.Join(dir, "resources.yaml")
			if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
				net.t.Fatal(err)
			}
			cfg.ResourcesFile = path
		}
	}
	cfg.Bootstrap = net.bootstrapFor(i)
	if net.opts.Configure != nil {
		net.opts.Configure(i, &cfg)
	}
	nd := &Node{Index: i, Dir: dir, Config: cfg}
	nd.Config.SendDelay = net.delayFor(nd)
	net.mu.Lock()
	net.nodes = append(net.nodes, nd)
	net.mu.Unlock()
	net.start(nd)
	return nd
}

func (net *Net) bootstrapFor(i int) []string {
	if i == 0 {
		return nil
	}
	from := i - 1
	if net.opts.Topology == Star {
		from = 0
	}
	net.mu.Lock()
	src := net.nodes[from]
	net.mu.Unlock()
	if src.Node == nil {
		return nil
	}
	var out []string
	for _, a := range src.Addrs() {
		out = append(out, a.String())
	}
	return out
}

func (net *Net) start(nd *Node) {
	net.t.Helper()
	n, err := node.New(net.ctx, nd.Config)
	// The nodes share one process, so a task start of another node — a
	// fork, which copies every open descriptor until the child execs — can
	// hold a just-closed store's directory lock for a moment. A node
	// restarted on its data dir waits that moment out; a real node has
	// its process to itself and needs no such grace.
	for deadline := time.Now().Add(3 * time.Second); err != nil && isDataDirInUse(err) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		n, err = node.New(net.ctx, nd.Config)
	}
	if err != nil {
		net.t.Fatalf("testnet: start node %d: %v", nd.Index, err)
	}
	nd.Node = n
	nd.self.Store(n.ID().String())
	// Pin the listen port so that peers remembering the old address can
	// reach a restarted node.
	var listen []string
	for _, a := range n.Host().Addrs() {
		listen = append(listen, a.String())
	}
	nd.Config.Listen = listen
	nd.Config.API = n.APIAddr()
}

// isDataDirInUse reports whether node.New failed because the data dir's
// store lock is held.
func isDataDirInUse(err error) bool {
	return errors.Is(err, store.ErrLocked)
}

// N is the number of nodes, up or down.
func (net *Net) N() int {
	net.mu.Lock()
	defer net.mu.Unlock()
	return len(net.nodes)
}

// Node returns node i.
func (net *Net) Node(i int) *Node {
	net.mu.Lock()
	defer net.mu.Unlock()
	return net.nodes[i]
}

// Up returns the nodes that are running.
func (net *Net) Up() []*Node {
	net.mu.Lock()
	defer net.mu.Unlock()
	var out []*Node
	for _, nd := range net.nodes {
		if nd.Node != nil {
			out = append(out, nd)
		}
	}
	return out
}

// Kill stops node i abruptly, as kill -9 would: no leave advert.
func (net *Net) Kill(i int) {
	nd := net.Node(i)
	if nd.Node != nil {
		nd.Node.Kill()
		nd.Node = nil
	}
}

// Stop stops node i gracefully.
func (net *Net) Stop(i int) {
	nd := net.Node(i)
	if nd.Node != nil {
		_ = nd.Node.Close()
		nd.Node = nil
	}
}

// Restart starts node i again with the same data dir and ports.
func (net *Net) Restart(i int) *Node {
	net.t.Helper()
	nd := net.Node(i)
	if nd.Node != nil {
		net.t.Fatalf("testnet: node %d is still running", i)
	}
	net.start(nd)
	return nd
}

// Partition cuts the connection between nodes i and j in both directions
// until Heal.
func (net *Net) Partition(i, j int) {
	a, b := net.Node(i), net.Node(j)
	a.Gater().Block(b.ID())
	b.Gater().Block(a.ID())
	_ = a.Host().Network().ClosePeer(b.ID())
	_ = b.Host().Network().ClosePeer(a.ID())
}

// Heal undoes Partition(i, j).
func (net *Net) Heal(i, j int) {
	a, b := net.Node(i), net.Node(j)
	a.Gater().Unblock(b.ID())
	b.Gater().Unblock(a.ID())
}

// WaitConverged waits until every running node lists every other running
// node as a peer.
func (net *Net) WaitConverged(d time.Duration) {
	net.t.Helper()
	waitfor.Cond(net.t, d, "membership to converge", func() bool {
		up := net.Up()
		for _, nd := range up {
			seen := map[peer.ID]bool{}
			for _, m := range nd.Peers() {
				seen[m.Advert.Peer] = true
			}
			for _, other := range up {
				if other != nd && !seen[other.ID()] {
					return false
				}
			}
		}
		return true
	})
}
