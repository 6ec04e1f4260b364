package gossip

import (
	"bytes"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// LeaveWatch tells Leave when its advert has been written to a peer.
// Publish only queues a message: a node that closes its host right after
// would close the connections under it, and its peers would wait out the
// missed intervals instead. It is a pubsub.RawTracer: pass Option() to
// the pubsub the Service's topic belongs to, and the watch in
// Config.LeaveWatch.
type LeaveWatch struct {
	mu   sync.Mutex
	want []byte        // the leaving advert's bytes; nil when none is awaited
	sent chan struct{} // closed when a peer was handed them
}

// NewLeaveWatch returns a watch awaiting nothing.
func NewLeaveWatch() *LeaveWatch { return &LeaveWatch{} }

// Option is the pubsub option that installs the watch.
func (w *LeaveWatch) Option() pubsub.Option { return pubsub.WithRawTracer(w) }

// expect arms the watch for data and returns what closes when a peer is
// handed it.
func (w *LeaveWatch) expect(data []byte) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want, w.sent = data, make(chan struct{})
	return w.sent
}

// SendRPCCompleted notes an RPC handed to the transport for peer p.
func (w *LeaveWatch) SendRPCCompleted(rpc *pubsub.RPC, _ peer.ID, _ time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.want == nil {
		return
	}
	for _, m := range rpc.GetPublish() {
		if bytes.Equal(m.GetData(), w.want) {
			close(w.sent)
			w.want = nil
			return
		}
	}
}

// The rest of pubsub.RawTracer: nothing to note.

func (*LeaveWatch) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*LeaveWatch) OnClosedOutboundStream(peer.ID)           {}
func (*LeaveWatch) Join(string)                              {}
func (*LeaveWatch) Leave(string)                             {}
func (*LeaveWatch) Graft(peer.ID, string)                    {}
func (*LeaveWatch) Prune(peer.ID, string)                    {}
func (*LeaveWatch) ValidateMessage(*pubsub.Message)          {}
func (*LeaveWatch) DeliverMessage(*pubsub.Message)           {}
func (*LeaveWatch) RejectMessage(*pubsub.Message, string)    {}
func (*LeaveWatch) DuplicateMessage(*pubsub.Message)         {}
func (*LeaveWatch) ThrottlePeer(peer.ID)                     {}
func (*LeaveWatch) RecvRPC(*pubsub.RPC)                      {}
func (*LeaveWatch) SendRPC(*pubsub.RPC, peer.ID)             {}
func (*LeaveWatch) DropRPC(*pubsub.RPC, peer.ID)             {}
func (*LeaveWatch) UndeliverableMessage(*pubsub.Message)     {}
