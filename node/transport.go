package node

import (
	"bufio"
	"context"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
)

// MarketProtocol carries market messages between two nodes: a long-lived
// stream per direction, each message a varint-length-prefixed Envelope.
const MarketProtocol = protocol.ID("/agora/market/1.0.0")

// JobsTopic is the pubsub topic for broadcast CFPs in a network.
func JobsTopic(network string) string { return "agora/" + network + "/jobs/1" }

// Limits of the transport.
const (
	sendQueue   = 4096            // messages waiting per peer
	dialTimeout = 5 * time.Second // opening a stream to a peer
)

// transport sends market messages over per-peer streams kept open, the
// way the measured figures favour (a new stream per message costs 5×).
type transport struct {
	n     *Node
	mu    sync.Mutex
	peers map[peer.ID]*outbox
}

type outbox struct {
	ch chan []byte
}

func newTransport(n *Node) *transport {
	t := &transport{n: n, peers: map[peer.ID]*outbox{}}
	n.host.SetStreamHandler(MarketProtocol, t.handle)
	return t
}

// send queues msg for node to; it never blocks the loop.
func (t *transport) send(to market.NodeID, msg market.Msg) {
	id, err := peer.Decode(string(to))
	if err != nil {
		log.Warnw("send to invalid peer id", "to", to, "err", err)
		return
	}
	b, err := wire.Encode(msg)
	if err != nil {
		log.Errorw("encode market message", "kind", market.Kind(msg), "err", err)
		return
	}
	t.mu.Lock()
	ob, ok := t.peers[id]
	if !ok {
		ob = &outbox{ch: make(chan []byte, sendQueue)}
		t.peers[id] = ob
		t.n.wg.Add(1)
		go t.run(id, ob)
	}
	t.mu.Unlock()
	select {
	case ob.ch <- b:
	default:
		log.Warnw("send queue full; dropping market message", "to", to, "kind", market.Kind(msg))
	}
}

// run writes one peer's queue onto a stream, reopening it after an error.
func (t *transport) run(id peer.ID, ob *outbox) {
	defer t.n.wg.Done()
	var s network.Stream
	var w *bufio.Writer
	var idStr string // id.String(), for SendDelay
	defer func() {
		if s != nil {
			_ = s.Close()
		}
	}()
	for {
		var b []byte
		select {
		case <-t.n.ctx.Done():
			return
		case b = <-ob.ch:
		}
		if d := t.n.cfg.SendDelay; d != nil {
			if idStr == "" {
				idStr = id.String()
			}
			if lat := d(idStr); lat > 0 {
				select {
				case <-t.n.ctx.Done():
					return
				case <-time.After(lat):
				}
			}
		}
		for attempt := 0; attempt < 2; attempt++ {
			if s == nil {
				ctx, cancel := context.WithTimeout(t.n.ctx, dialTimeout)
				ns, err := t.n.host.NewStream(network.WithAllowLimitedConn(ctx, "market"), id, MarketProtocol)
				cancel()
				if err != nil {
					log.Debugw("open market stream", "peer", id, "err", err)
					break
				}
				s, w = ns, bufio.NewWriter(ns)
			}
			err := wire.WriteFrame(w, b)
			if err == nil {
				// Flush now unless more is queued: batches bursts.
				if len(ob.ch) == 0 {
					err = w.Flush()
				}
			}
			if err == nil {
				break
			}
			log.Debugw("write market stream", "peer", id, "err", err)
			_ = s.Reset()
			s = nil
		}
	}
}

// handle reads messages from a peer's stream and feeds them to the loop,
// dropping any whose claimed sender is not the stream's peer.
func (t *transport) handle(s network.Stream) {
	defer s.Close()
	from := s.Conn().RemotePeer()
	fromID := market.NodeID(from.String()) // base58 once per stream, not per message
	r := bufio.NewReader(s)
	for {
		b, err := wire.ReadFrame(r, wire.MaxMessageBytes)
		if err != nil {
			return
		}
		msg, err := wire.Decode(b)
		if err != nil {
			log.Debugw("bad market message", "from", from, "err", err)
			_ = s.Reset()
			return
		}
		t.n.deliver(fromID, msg)
	}
}

// deliver hands a message from peer fromID (authenticated by the
// stream) to the market, which drops it if it claims another sender.
func (n *Node) deliver(fromID market.NodeID, msg market.Msg) {
	n.exec(func() { n.mkt.Step(time.Now(), fromID, msg) })
}

// joinJobsTopic subscribes to broadcast CFPs.
func (n *Node) joinJobsTopic() error {
	name := JobsTopic(n.cfg.Network)
	err := n.ps.RegisterTopicValidator(name, func(_ context.Context, _ peer.ID, m *pubsub.Message) pubsub.ValidationResult {
		msg, err := wire.Decode(m.Data)
		if err != nil {
			return pubsub.ValidationReject
		}
		cfp, ok := msg.(market.CFP)
		if !ok || cfp.Sender() != market.NodeID(m.GetFrom().String()) {
			return pubsub.ValidationReject
		}
		m.ValidatorData = cfp
		return pubsub.ValidationAccept
	})
	if err != nil {
		return err
	}
	if n.jobsTopic, err = n.ps.Join(name); err != nil {
		return err
	}
	sub, err := n.jobsTopic.Subscribe()
	if err != nil {
		return err
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer sub.Cancel()
		for {
			m, err := sub.Next(n.ctx)
			if err != nil {
				return
			}
			cfp, ok := m.ValidatorData.(market.CFP)
			if !ok || m.GetFrom() == n.host.ID() {
				continue
			}
			n.exec(func() { n.mkt.Step(time.Now(), cfp.Manager, cfp) })
		}
	}()
	return nil
}

func (n *Node) broadcast(msg market.Msg) {
	t := n.jobsTopic
	if t == nil {
		return // not joined yet (restoring at start): the round's timeout recovers
	}
	b, err := wire.Encode(msg)
	if err != nil {
		log.Errorw("encode broadcast", "err", err)
		return
	}
	go func() {
		if err := t.Publish(n.ctx, b); err != nil && n.ctx.Err() == nil {
			log.Debugw("broadcast CFP", "err", err)
		}
	}()
}

// flush waits (up to d) until every per-peer queue is empty, so that
// reports queued just before a shutdown leave the node.
func (t *transport) flush(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		empty := true
		t.mu.Lock()
		for _, ob := range t.peers {
			if len(ob.ch) > 0 {
				empty = false
			}
		}
		t.mu.Unlock()
		if empty {
			time.Sleep(20 * time.Millisecond) // the last write in flight
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
