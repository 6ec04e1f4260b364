package accounting

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/market/wire"
)

var log = logging.Logger("accounting")

// Protocol is the accounting push protocol.
const Protocol = protocol.ID("/agora/acct/1.0.0")

// Limits of a push.
const (
	MaxPush      = 64
	maxPushBytes = MaxPush*acct.MaxRecordBytes + 1024
	maxReply     = 64 << 10
	timeout      = 5 * time.Second
)

// Push is what a pusher sends.
type Push struct {
	Records []acct.Record `json:"records"`
}

// Reply is what the receiver answers.
type Reply struct {
	Stored  int      `json:"stored"`
	Refused []string `json:"refused,omitempty"`
}

// Service pushes this node's records and takes its peers'.
type Service struct {
	h       host.Host
	receive func(from market.NodeID, recs []acct.Record) Reply
}

// New serves pushes on h; receive decides on and keeps what a peer
// pushes.
func New(h host.Host, receive func(from market.NodeID, recs []acct.Record) Reply) *Service {
	s := &Service{h: h, receive: receive}
	h.SetStreamHandler(Protocol, s.serve)
	return s
}

// Close stops serving.
func (s *Service) Close() { s.h.RemoveStreamHandler(Protocol) }

func (s *Service) serve(st network.Stream) {
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(timeout))
	var rep Reply
	b, err := wire.ReadFrame(bufio.NewReader(st), maxPushBytes)
	var p Push
	switch {
	case err != nil:
		rep.Refused = []string{"read: " + err.Error()}
	case json.Unmarshal(b, &p) != nil:
		rep.Refused = []string{"malformed push: not {\"records\": [...]}"}
	case len(p.Records) > MaxPush:
		rep.Refused = []string{fmt.Sprintf("%d records, over the limit of %d", len(p.Records), MaxPush)}
	default:
		rep = s.receive(market.NodeID(st.Conn().RemotePeer().String()), p.Records)
	}
	out, _ := json.Marshal(rep)
	w := bufio.NewWriter(st)
	if wire.WriteFrame(w, out) == nil {
		_ = w.Flush()
	}
}

// Send pushes recs (at most MaxPush) to peer p and returns its reply.
func (s *Service) Send(ctx context.Context, p peer.ID, recs []acct.Record) (Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := s.h.NewStream(network.WithAllowLimitedConn(ctx, "acct"), p, Protocol)
	if err != nil {
		return Reply{}, err
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	b, err := json.Marshal(Push{Records: recs})
	if err != nil {
		return Reply{}, err
	}
	w := bufio.NewWriter(st)
	if err := wire.WriteFrame(w, b); err != nil {
		return Reply{}, err
	}
	if err := w.Flush(); err != nil {
		return Reply{}, err
	}
	_ = st.CloseWrite()
	rb, err := wire.ReadFrame(bufio.NewReader(st), maxReply)
	if err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.Unmarshal(rb, &rep); err != nil {
		return Reply{}, fmt.Errorf("accounting reply from %s: %w", p, err)
	}
	return rep, nil
}

// Spread pushes rec to each of peers, logging (at debug) those that
// refuse or cannot be reached: the record stays kept here either way.
func (s *Service) Spread(ctx context.Context, rec acct.Record, peers []peer.ID) {
	for _, p := range peers {
		rep, err := s.Send(ctx, p, []acct.Record{rec})
		switch {
		case err != nil:
			log.Debugw("push accounting record", "peer", p, "record", rec.ID(), "err", err)
		case rep.Stored == 0:
			log.Debugw("accounting record refused", "peer", p, "record", rec.ID(), "why", rep.Refused)
		}
	}
}
