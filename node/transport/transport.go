package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
)

var log = logging.Logger("transport")

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

// Options configure a Transport.
type Options struct {
	// Network names the Agora network (its jobs topic).
	Network string
	// Deliver is given every message received, with the node it came
	// from (the stream's or the pubsub message's authenticated peer). It
	// must not block.
	Deliver func(from market.NodeID, msg market.Msg)
	// SendDelay, when set, delays every message to a peer by the latency
	// it returns (fault injection for tests).
	SendDelay func(to string) time.Duration
	// Admitted, when set, says whether a broadcast's author is admitted
	// to the network; a call for bids from one that is not is rejected.
	Admitted func(peer.ID) bool
	// Heard, when set, is told the peer of every well-formed message
	// received over a stream: it is alive now. It must not block.
	Heard func(peer.ID)
}

// Transport sends and receives market messages.
type Transport struct {
	h                 host.Host
	opts              Options
	ctx               context.Context
	stop              context.CancelFunc
	wg                sync.WaitGroup
	topic             *pubsub.Topic
	usage, usageDelta *pubsub.Topic
	mu                sync.Mutex
	peers             map[peer.ID]*outbox
	// inflight counts the frames queued or being written, for Flush;
	// idle, when a Flush waits, is closed as inflight falls to zero.
	inflight int
	idle     chan struct{}
}

type outbox struct {
	ch chan []byte
}

// New starts serving the market protocol on h and joins the network's
// jobs and usage topics on ps.
func New(h host.Host, ps *pubsub.PubSub, opts Options) (*Transport, error) {
	ctx, stop := context.WithCancel(context.Background())
	t := &Transport{h: h, opts: opts, ctx: ctx, stop: stop, peers: map[peer.ID]*outbox{}}
	h.SetStreamHandler(MarketProtocol, t.handle)
	err := t.joinJobs(ps)
	if err == nil {
		err = t.joinUsage(ps)
	}
	if err != nil {
		stop()
		h.RemoveStreamHandler(MarketProtocol)
		t.wg.Wait()
		return nil, err
	}
	return t, nil
}

// Close stops the transport: messages still queued are dropped.
func (t *Transport) Close() {
	t.h.RemoveStreamHandler(MarketProtocol)
	t.mu.Lock()
	t.stop() // under mu: Send and Broadcast start no goroutine after it
	t.mu.Unlock()
	t.wg.Wait()
}

// Send queues msg for node to; it never blocks.
func (t *Transport) Send(to market.NodeID, msg market.Msg) {
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
	if !ok && t.ctx.Err() == nil {
		ob = &outbox{ch: make(chan []byte, sendQueue)}
		t.peers[id] = ob
		t.wg.Add(1)
		go t.run(id, ob)
	}
	if ob != nil {
		t.inflight++
	}
	t.mu.Unlock()
	if ob == nil {
		return // closed
	}
	select {
	case ob.ch <- b:
	default:
		t.done(1)
		log.Warnw("send queue full; dropping market message", "to", to, "kind", market.Kind(msg))
	}
}

// done notes n frames written (or given up).
func (t *Transport) done(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight -= n; t.inflight == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// run writes one peer's queue onto a stream, reopening it after an error.
func (t *Transport) run(id peer.ID, ob *outbox) {
	defer t.wg.Done()
	var s network.Stream
	idStr := id.String()
	defer func() {
		if s != nil {
			_ = s.Close()
		}
	}()
	// batch holds the frames of a burst, written to the stream in one
	// go once nothing more is queued; when that write fails, the whole
	// burst goes again on a new stream (a write into a connection whose
	// peer restarted fails only later: every frame since the last good
	// write is in doubt, not only the last one).
	var batch []byte
	frames := 0
	for {
		var b []byte
		select {
		case <-t.ctx.Done():
			return
		case b = <-ob.ch:
		}
		if d := t.opts.SendDelay; d != nil {
			if lat := d(idStr); lat > 0 {
				select {
				case <-t.ctx.Done():
					return
				case <-time.After(lat):
				}
			}
		}
		batch = binary.AppendUvarint(batch, uint64(len(b)))
		batch = append(batch, b...)
		if frames++; len(ob.ch) > 0 && frames < maxBatchFrames && len(batch) < maxBatchBytes {
			continue
		}
		for attempt := 0; attempt < 2; attempt++ {
			if s == nil {
				if s = t.open(id); s == nil {
					break
				}
			}
			_, err := s.Write(batch)
			if err == nil {
				break
			}
			log.Debugw("write market stream", "peer", id, "err", err)
			_ = s.Reset()
			s = nil
		}
		t.done(frames)
		batch, frames = batch[:0], 0 // sent, or given up: the market's timeouts recover
	}
}

// Bounds of one write of a burst.
const (
	maxBatchFrames = 256
	maxBatchBytes  = 256 << 10
)

// open opens a market stream to id, or returns nil.
func (t *Transport) open(id peer.ID) network.Stream {
	ctx, cancel := context.WithTimeout(t.ctx, dialTimeout)
	defer cancel()
	s, err := t.h.NewStream(network.WithAllowLimitedConn(ctx, "market"), id, MarketProtocol)
	if err != nil {
		log.Debugw("open market stream", "peer", id, "err", err)
		return nil
	}
	return s
}

// handle reads messages from a peer's stream and delivers them.
func (t *Transport) handle(s network.Stream) {
	defer s.Close()
	id := s.Conn().RemotePeer()
	from := market.NodeID(id.String()) // base58 once per stream, not per message
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
		if t.opts.Heard != nil {
			t.opts.Heard(id)
		}
		t.opts.Deliver(from, msg)
	}
}

// validateCFP takes a broadcast call for bids: one that is not a CFP of
// its publisher's is rejected (no honest relay passes it on); one whose
// author is not admitted here is only dropped, not held against the
// relay, which may have admitted the author before a revocation reached
// it, or before this node met the author.
func (t *Transport) validateCFP(m *pubsub.Message) pubsub.ValidationResult {
	msg, err := wire.Decode(m.Data)
	if err != nil {
		return pubsub.ValidationReject
	}
	cfp, ok := msg.(market.CFP)
	if !ok || cfp.Sender() != market.NodeID(m.GetFrom().String()) {
		return pubsub.ValidationReject
	}
	if t.opts.Admitted != nil && !t.opts.Admitted(m.GetFrom()) {
		return pubsub.ValidationIgnore
	}
	m.ValidatorData = cfp
	return pubsub.ValidationAccept
}

// joinJobs subscribes to broadcast CFPs: a message that is not a CFP of
// its publisher's is rejected by the topic's validator.
func (t *Transport) joinJobs(ps *pubsub.PubSub) (err error) {
	t.topic, err = t.join(ps, JobsTopic(t.opts.Network), t.validateCFP)
	return err
}

// join joins topic name with validator validate, whose accepted
// messages carry a market.Msg as their ValidatorData, and delivers
// those of other nodes to the market, from their publisher.
func (t *Transport) join(ps *pubsub.PubSub, name string, validate func(*pubsub.Message) pubsub.ValidationResult) (*pubsub.Topic, error) {
	err := ps.RegisterTopicValidator(name, func(_ context.Context, _ peer.ID, m *pubsub.Message) pubsub.ValidationResult {
		return validate(m)
	})
	if err != nil {
		return nil, err
	}
	topic, err := ps.Join(name)
	if err != nil {
		return nil, err
	}
	sub, err := topic.Subscribe()
	if err != nil {
		return nil, err
	}
	t.wg.Go(func() {
		defer sub.Cancel()
		for {
			m, err := sub.Next(t.ctx)
			if err != nil {
				return
			}
			msg, ok := m.ValidatorData.(market.Msg)
			if !ok || m.GetFrom() == t.h.ID() {
				continue
			}
			t.opts.Deliver(market.NodeID(m.GetFrom().String()), msg)
		}
	})
	return topic, nil
}

// Broadcast publishes msg (a CFP) on the jobs topic, off the caller's
// goroutine.
func (t *Transport) Broadcast(msg market.Msg) {
	b, err := wire.Encode(msg)
	if err != nil {
		log.Errorw("encode broadcast", "err", err)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := t.topic.Publish(t.ctx, b); err != nil && t.ctx.Err() == nil {
			log.Debugw("broadcast CFP", "err", err)
		}
	}()
}

// Flush waits, up to d or until ctx ends, until every message queued
// has been written to its peer's stream (or given up), so that reports
// queued just before a shutdown leave the node.
func (t *Transport) Flush(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		t.mu.Lock()
		if t.inflight == 0 {
			t.mu.Unlock()
			return nil
		}
		if t.idle == nil {
			t.idle = make(chan struct{})
		}
		idle := t.idle
		t.mu.Unlock()
		select {
		case <-idle:
		case <-timer.C:
			return errors.New("transport: messages still queued")
		case <-ctx.Done():
			return errors.New("transport: messages still queued")
		}
	}
}
