package replication

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/store"
)

// Protocol is the job-record protocol. It is the only version: the
// drafts before it (a stream per record, JSON records) were never
// released.
const Protocol = protocol.ID("/agora/jobrecord/1.0.0")

// Limits of the protocol.
const (
	// MaxFrame bounds a request frame, and so a record: one of
	// spec.MaxJobReplicas replicas with every retry used, with room.
	MaxFrame = 16 << 20
	maxFrame = MaxFrame
	// recordsPerFrame bounds the records of one request frame. The peer
	// decodes, checks and stores a frame in one go, without yielding its
	// core; bounded frames (and a yield between them) keep a burst of
	// record updates from stalling the auctions beside it.
	recordsPerFrame = 8
	// maxAnswer bounds an answer frame.
	maxAnswer = 64 << 10
)

// Copy is a copy of a job record held for its manager: the record, its
// replica set and when it was stored.
type Copy struct {
	Record   market.JobRecord `json:"record"`
	Replicas []market.NodeID  `json:"replicas"`
	Updated  time.Time        `json:"updated"`
}

// answer is an answer frame: how many records of the request were stored,
// why each refused one was, or why the whole frame was.
type answer struct {
	Stored int               `json:"stored"`
	Errors map[string]string `json:"errors,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// Options configure a Service.
type Options struct {
	// Copies is the bucket the copies pushed to this node go to.
	Copies *store.Bucket[Copy]
	// Check says why a record pushed by from must not be kept, or nil
	// (market.CheckReplica).
	Check func(from market.NodeID, rec market.JobRecord, held *market.HeldCopy) error
	// Stored is told of the copies stored, and of those deleted because
	// their replica set no longer holds this node, after each frame (the
	// node hands them to its market: ReplicaStored).
	Stored func([]Copy)
	// Timeout bounds a push to one peer; 3s.
	Timeout time.Duration
	// Refused counts the copies refused for being over a peer's bound
	// (reason RefusedQuota); nil: not counted.
	Refused func(reason string)
	// MaxNew is the most new copies one peer may have this node keep per
	// NewWindow; maxNewCopies when zero.
	MaxNew int
}

// RefusedQuota is the reason a copy over its manager's bound is refused.
const RefusedQuota = "record_quota"

// Bound on new copies from one peer: a manager replicates each job once
// to each holder, so this is a submission rate of about 33 jobs a second
// sustained; finished jobs' copies expire after their retention, which
// with it bounds what one peer can make a node hold.
const (
	NewWindow    = 10 * time.Minute
	maxNewCopies = 20000
)

// Service pushes copies to peers and serves their pushes.
type Service struct {
	h     host.Host
	opts  Options
	mu    sync.Mutex
	links map[peer.ID]*link

	newMu sync.Mutex
	news  map[market.NodeID]int // new copies per peer in the window
	newAt time.Time             // when the window began
}

// New starts serving the protocol on h.
func New(h host.Host, opts Options) *Service {
	if opts.Timeout <= 0 {
		opts.Timeout = 3 * time.Second
	}
	if opts.MaxNew <= 0 {
		opts.MaxNew = maxNewCopies
	}
	if opts.Refused == nil {
		opts.Refused = func(string) {}
	}
	s := &Service{h: h, opts: opts, links: map[peer.ID]*link{}, news: map[market.NodeID]int{}}
	h.SetStreamHandler(Protocol, s.serve)
	return s
}

// Close stops serving and ends the streams to peers.
func (s *Service) Close() {
	s.h.RemoveStreamHandler(Protocol)
	s.mu.Lock()
	ps := make([]peer.ID, 0, len(s.links))
	for p := range s.links {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	for _, p := range ps {
		s.Forget(p)
	}
}

// link is one peer's stream. Writes and the queue of waiting requests
// share mu, so that the queue is in the order the frames left, which is
// the order their answers come back in.
type link struct {
	mu      sync.Mutex
	s       network.Stream // nil until opened, and after an error
	w       *bufio.Writer
	waiting []chan result
}

// result is the answer to one request frame, or why none came.
type result struct {
	answer answer
	err    error
}

func (s *Service) link(p peer.ID) *link {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.links[p]
	if !ok {
		k = &link{}
		s.links[p] = k
	}
	return k
}

// Forget ends the stream to p (the peer left the view).
func (s *Service) Forget(p peer.ID) {
	s.mu.Lock()
	k := s.links[p]
	delete(s.links, p)
	s.mu.Unlock()
	if k != nil {
		k.mu.Lock()
		k.fail(k.s, errors.New("replica peer gone"))
		k.mu.Unlock()
	}
}

// fail ends stream st if it is still the link's and answers every waiting
// request with err. The caller holds k.mu.
func (k *link) fail(st network.Stream, err error) {
	if st == nil || k.s != st {
		return
	}
	_ = st.Reset()
	k.s, k.w = nil, nil
	for _, ch := range k.waiting {
		ch <- result{err: err}
	}
	k.waiting = nil
}

// readAnswers hands each answer read from st to the oldest waiting
// request, until st ends.
func (k *link) readAnswers(st network.Stream) {
	r := bufio.NewReader(st)
	for {
		b, err := wire.ReadFrame(r, maxAnswer)
		var a answer
		if err == nil {
			err = json.Unmarshal(b, &a)
		}
		k.mu.Lock()
		if err != nil || k.s != st || len(k.waiting) == 0 {
			if err == nil {
				err = errors.New("unexpected job-record answer")
			}
			k.fail(st, fmt.Errorf("job-record stream: %w", err))
			k.mu.Unlock()
			return
		}
		ch := k.waiting[0]
		k.waiting = k.waiting[1:]
		k.mu.Unlock()
		ch <- result{answer: a}
	}
}

// Push copies each record to its peers, and to the peers that must drop
// their copy (market.ReplicaCopy), each record encoded once and one
// request per peer and frame, and waits for the answers. It returns, per
// job, how many peers stored its record or dropped theirs; errs holds
// what went wrong, for the log.
func (s *Service) Push(ctx context.Context, copies []market.ReplicaCopy) (stored map[string]int, errs error) {
	byPeer := map[market.NodeID][]encoded{}
	for _, c := range copies {
		b, err := encodeElement(c.Record, c.Peers)
		if err == nil && len(b) > maxFrame-64 {
			err = fmt.Errorf("%d bytes encoded, over the %d-byte frame limit", len(b), maxFrame)
		}
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("job %s cannot be copied: %w", c.Record.ID, err))
			continue
		}
		for _, p := range append(slices.Clip(c.Peers), c.Drop...) {
			byPeer[p] = append(byPeer[p], encoded{id: c.Record.ID, b: b})
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored = map[string]int{}
	for to, recs := range byPeer {
		p, err := peer.Decode(string(to))
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("replica peer %q: %w", to, err))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.pushTo(ctx, p, recs)
			mu.Lock()
			defer mu.Unlock()
			for id := range ok {
				stored[id]++
			}
			if err != nil {
				errs = errors.Join(errs, fmt.Errorf("peer %s: %w", p.ShortString(), err))
			}
		}()
	}
	wg.Wait()
	return stored, errs
}

// encoded is one record's frame element.
type encoded struct {
	id string
	b  []byte
}

// pushTo sends recs to peer p, frame after frame, and returns the IDs of
// the records p stored.
func (s *Service) pushTo(ctx context.Context, p peer.ID, recs []encoded) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	stored := map[string]bool{}
	elems := make([][]byte, len(recs))
	for i, r := range recs {
		elems[i] = r.b
	}
	for len(recs) > 0 {
		k, body := requestFrame(elems)
		if err := s.pushFrame(ctx, p, recs[:k], body, stored); err != nil {
			return stored, err
		}
		recs, elems = recs[k:], elems[k:]
	}
	return stored, nil
}

// pushFrame sends one request frame (holding recs) on p's link, opening
// the stream when there is none, and adds the records p stored to stored.
func (s *Service) pushFrame(ctx context.Context, p peer.ID, recs []encoded, body []byte, stored map[string]bool) error {
	k := s.link(p)
	ch := make(chan result, 1)
	k.mu.Lock()
	if k.s == nil {
		st, err := s.h.NewStream(network.WithAllowLimitedConn(ctx, "replication"), p, Protocol)
		if err != nil {
			k.mu.Unlock()
			return err
		}
		k.s, k.w = st, bufio.NewWriter(st)
		go k.readAnswers(st)
	}
	st := k.s
	err := wire.WriteFrame(k.w, body)
	if err == nil {
		err = k.w.Flush()
	}
	if err != nil {
		k.fail(st, err)
		k.mu.Unlock()
		return err
	}
	k.waiting = append(k.waiting, ch)
	k.mu.Unlock()
	select {
	case res := <-ch:
		if res.err != nil {
			return res.err
		}
		if res.answer.Error != "" {
			return errors.New(res.answer.Error)
		}
		for _, r := range recs {
			if _, bad := res.answer.Errors[r.id]; !bad {
				stored[r.id] = true
			}
		}
		if len(res.answer.Errors) > 0 {
			return fmt.Errorf("%d of %d records refused: %v", len(res.answer.Errors), len(recs), res.answer.Errors)
		}
		return nil
	case <-ctx.Done():
		// The peer is too slow: start afresh, so that a request queued
		// behind this one is not left waiting as well.
		k.mu.Lock()
		k.fail(st, ctx.Err())
		k.mu.Unlock()
		return ctx.Err()
	}
}

// serve answers every request frame on st with what storing it came to,
// until st ends.
func (s *Service) serve(st network.Stream) {
	defer st.Close()
	from := market.NodeID(st.Conn().RemotePeer().String())
	r, w := bufio.NewReader(st), bufio.NewWriter(st)
	for {
		b, err := wire.ReadFrame(r, maxFrame)
		if err != nil {
			return // the manager closed the stream, or it broke
		}
		out, _ := json.Marshal(s.storeFrame(from, b, time.Now()))
		if wire.WriteFrame(w, out) != nil || w.Flush() != nil {
			_ = st.Reset()
			return
		}
		runtime.Gosched() // see recordsPerFrame
	}
}

// storeFrame decodes a request frame from peer from and stores its
// records that pass the check, in one write; a record whose replica set
// does not hold this node deletes its copy instead.
func (s *Service) storeFrame(from market.NodeID, b []byte, now time.Time) answer {
	elems, err := decodeFrame(b)
	if err != nil {
		return answer{Error: fmt.Sprintf("malformed job records: %v", err)}
	}
	var a answer
	self := market.NodeID(s.h.ID().String())
	entries := make([]store.Entry[Copy], 0, len(elems))
	var dropped []Copy
	for _, e := range elems {
		var held *market.HeldCopy
		if c, ok, err := s.opts.Copies.Get(e.Record.ID); err != nil {
			return answer{Error: err.Error()}
		} else if ok {
			held = &market.HeldCopy{Manager: c.Record.Manager, Holders: c.Replicas}
		}
		err := s.opts.Check(from, e.Record, held)
		if err == nil && held == nil {
			err = s.countNew(from, now)
		}
		if err != nil {
			if a.Errors == nil {
				a.Errors = map[string]string{}
			}
			a.Errors[e.Record.ID] = wire.ClipText(err.Error(), wire.MaxErrorLen)
			continue
		}
		c := Copy{Record: e.Record, Replicas: e.Replicas, Updated: now}
		if !slices.Contains(e.Replicas, self) {
			if err := s.opts.Copies.Delete(e.Record.ID); err != nil {
				return answer{Error: err.Error()}
			}
			dropped = append(dropped, c)
			continue
		}
		entries = append(entries, store.Entry[Copy]{Key: e.Record.ID, Value: c})
	}
	if err := s.opts.Copies.PutAll(entries); err != nil {
		return answer{Error: err.Error()}
	}
	cs := dropped
	for _, e := range entries {
		cs = append(cs, e.Value)
	}
	if len(cs) > 0 && s.opts.Stored != nil {
		s.opts.Stored(cs)
	}
	a.Stored = len(cs)
	return a
}

// countNew counts a new copy from peer from, and refuses it past the
// peer's bound.
func (s *Service) countNew(from market.NodeID, now time.Time) error {
	s.newMu.Lock()
	defer s.newMu.Unlock()
	if now.Sub(s.newAt) > NewWindow {
		clear(s.news)
		s.newAt = now
	}
	if s.news[from] >= s.opts.MaxNew {
		s.opts.Refused(RefusedQuota)
		return fmt.Errorf("%d new records from you in %v, over the limit", s.news[from], NewWindow)
	}
	s.news[from]++
	return nil
}
