package transport

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/waitfor"
)

func flushEnd(t *testing.T, opts Options) (host.Host, *Transport) {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ps, err := pubsub.NewGossipSub(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	opts.Network = "flush-test"
	tr, err := New(h, ps, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return h, tr
}

// TestFlushWaitsForWrites: Flush returns once every queued message is
// written (all of them then arrive), and not before: with each write
// held back 300 ms it gives up at its 50 ms bound.
func TestFlushWaitsForWrites(t *testing.T) {
	var got atomic.Int64
	hb, _ := flushEnd(t, Options{Deliver: func(market.NodeID, market.Msg) { got.Add(1) }})
	var slow atomic.Bool
	ha, a := flushEnd(t, Options{Deliver: func(market.NodeID, market.Msg) {}, SendDelay: func(string) time.Duration {
		if slow.Load() {
			return 300 * time.Millisecond
		}
		return 0
	}})
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	to := market.NodeID(hb.ID().String())
	const n = 100
	for i := range n {
		a.Send(to, market.ResultAck{Key: market.TaskKey{Job: "j", Task: "t"}, Epoch: uint64(i + 1), Attempt: 1})
	}
	if err := a.Flush(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 5*time.Second, "every flushed message to arrive", func() bool { return got.Load() == n })

	slow.Store(true)
	a.Send(to, market.ResultAck{Key: market.TaskKey{Job: "j", Task: "t"}, Epoch: n + 1, Attempt: 1})
	if err := a.Flush(context.Background(), 50*time.Millisecond); err == nil {
		t.Fatal("Flush returned while a write was held back")
	}
	if err := a.Flush(context.Background(), 5*time.Second); err != nil {
		t.Fatalf("Flush after the held write: %v", err)
	}
}
