package query

import (
	"bufio"
	"context"
	"errors"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market/wire"
)

var log = logging.Logger("query")

// Protocol is the query protocol.
const Protocol = protocol.ID("/agora/query/1.0.0")

// Limits of queries.
const (
	// Timeout bounds one question and its answer, both sides.
	Timeout = 3 * time.Second
	// FanoutLimit is the most peers Fanout asks at once.
	FanoutLimit = 64
)

// ErrNotFound means no peer asked has what the query was about.
var ErrNotFound = errors.New("not found")

// Service asks peers questions and answers theirs.
type Service struct {
	h      host.Host
	answer func(wire.Query) wire.QueryReply
}

// New starts answering queries on h with answer.
func New(h host.Host, answer func(wire.Query) wire.QueryReply) *Service {
	s := &Service{h: h, answer: answer}
	h.SetStreamHandler(Protocol, s.serve)
	return s
}

func (s *Service) serve(st network.Stream) {
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(Timeout))
	b, err := wire.ReadFrame(bufio.NewReader(st), wire.MaxQueryBytes)
	if err != nil {
		return
	}
	q, err := wire.DecodeQuery(b)
	var rep wire.QueryReply
	if err != nil {
		rep.Error = err.Error()
	} else {
		rep = s.answer(q)
	}
	rep.Error = wire.ClipText(rep.Error, wire.MaxErrorLen)
	out, err := wire.EncodeQueryReply(rep)
	if err != nil {
		log.Warnw("encode query reply", "err", err)
		_ = st.Reset()
		return
	}
	w := bufio.NewWriter(st)
	if wire.WriteFrame(w, out) == nil {
		_ = w.Flush()
	}
}

// Ask sends one query to one peer and returns its reply.
func (s *Service) Ask(ctx context.Context, p peer.ID, q wire.Query) (wire.QueryReply, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	st, err := s.h.NewStream(network.WithAllowLimitedConn(ctx, "query"), p, Protocol)
	if err != nil {
		return wire.QueryReply{}, err
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	b, err := wire.EncodeQuery(q)
	if err != nil {
		return wire.QueryReply{}, err
	}
	w := bufio.NewWriter(st)
	if err := wire.WriteFrame(w, b); err != nil {
		return wire.QueryReply{}, err
	}
	if err := w.Flush(); err != nil {
		return wire.QueryReply{}, err
	}
	_ = st.CloseWrite()
	rb, err := wire.ReadFrame(bufio.NewReader(st), wire.MaxQueryReplyBytes)
	if err != nil {
		return wire.QueryReply{}, err
	}
	return wire.DecodeQueryReply(rb)
}

// Fanout asks peers (the first FanoutLimit of them) in parallel and
// returns the first reply with Found set, and who gave it; ErrNotFound
// when none did.
func (s *Service) Fanout(ctx context.Context, peers []peer.ID, q wire.Query) (wire.QueryReply, peer.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	type res struct {
		rep wire.QueryReply
		p   peer.ID
	}
	found := make(chan res, 1)
	var wg sync.WaitGroup
	for i, p := range peers {
		if i >= FanoutLimit {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rep, err := s.Ask(ctx, p, q); err == nil && rep.Found {
				select {
				case found <- res{rep, p}:
				default:
				}
			}
		}()
	}
	go func() { wg.Wait(); close(found) }()
	r, ok := <-found
	if !ok {
		return wire.QueryReply{}, "", ErrNotFound
	}
	return r.rep, r.p, nil
}

// AskAll asks every peer, FanoutLimit at a time, each within Timeout,
// and returns the bodies of the replies without an error, by peer ID, and
// the peers that gave none or an error.
func (s *Service) AskAll(ctx context.Context, peers []peer.ID, q wire.Query) (map[string][]byte, []string) {
	slots := make(chan struct{}, FanoutLimit)
	var mu sync.Mutex
	bodies := make(map[string][]byte, len(peers))
	var missing []string
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			rep, err := s.Ask(ctx, p, q) // within Timeout
			mu.Lock()
			defer mu.Unlock()
			if err != nil || rep.Error != "" {
				missing = append(missing, p.String())
				return
			}
			bodies[p.String()] = rep.Body
		})
	}
	wg.Wait()
	return bodies, missing
}
