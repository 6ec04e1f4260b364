package admission

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/wire"
)

var log = logging.Logger("admission")

// Protocol is the admission handshake: one message each way.
const Protocol = protocol.ID("/agora/admit/1.0.0")

// Timings.
const (
	// DefaultTimeout bounds the handshake, and how long a stream waits
	// for its peer's admission.
	DefaultTimeout = 5 * time.Second
	// refuseFor is how long a refused peer's connections are refused
	// before it may try again.
	refuseFor = time.Minute
)

// Reasons a peer or message is refused, as Options.Refused counts them.
const (
	ReasonNoCertificate = "no_certificate"    // the peer does not speak the admission protocol
	ReasonCertificate   = "bad_certificate"   // its chain does not verify (another authority, expired, forged)
	ReasonRevoked       = "revoked"           // its certificate was revoked, or expired, while admitted
	ReasonStream        = "unadmitted_stream" // a stream from or to a peer not admitted
	ReasonAdvert        = "unadmitted_advert" // an advert without a valid certificate
	ReasonRevocation    = "bad_revocation"    // a revocation that does not verify
)

// Options configure an Admission.
type Options struct {
	// Book holds the authority and the revocations known at start; the
	// Admission keeps a copy of its own.
	Book *auth.Book
	// Chain is this node's certificate chain.
	Chain auth.Chain
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Block refuses connections with a peer for a while.
	Block func(p peer.ID, d time.Duration)
	// Refused counts a refusal by reason.
	Refused func(reason string)
	// Dropped is told of an admitted peer that no longer is (revoked,
	// expired): the node forgets it.
	Dropped func(p peer.ID)
	// Learned is told of every new revocation taken (the node keeps it
	// and hands it to the market).
	Learned func(auth.Revocation)
	// Timeout bounds the handshake (DefaultTimeout when zero).
	Timeout time.Duration
}

// Admission admits peers; see the package comment.
type Admission struct {
	h    host.Host
	opts Options

	mu      sync.Mutex
	book    *auth.Book
	peers   map[peer.ID]*admitted
	pending map[peer.ID]chan struct{} // handshakes in flight
	refused map[peer.ID]time.Time     // until when
	closed  bool
	wg      sync.WaitGroup
}

// admitted is a peer's verified certificate.
type admitted struct {
	id     auth.NodeIdentity
	chain  auth.Chain
	digest [32]byte
}

// New starts admitting on h: it serves the handshake and runs it on
// every new connection. It fails when the node's own chain does not
// verify.
func New(h host.Host, opts Options) (*Admission, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	for _, f := range []*func(string){&opts.Refused} {
		if *f == nil {
			*f = func(string) {}
		}
	}
	if opts.Block == nil {
		opts.Block = func(peer.ID, time.Duration) {}
	}
	if opts.Dropped == nil {
		opts.Dropped = func(peer.ID) {}
	}
	if opts.Learned == nil {
		opts.Learned = func(auth.Revocation) {}
	}
	a := &Admission{h: h, opts: opts, book: opts.Book.Clone(), peers: map[peer.ID]*admitted{},
		pending: map[peer.ID]chan struct{}{}, refused: map[peer.ID]time.Time{}}
	if _, err := a.book.VerifyNode(opts.Chain, h.ID().String(), opts.Now()); err != nil {
		return nil, fmt.Errorf("this node's certificate: %w", err)
	}
	h.SetStreamHandler(Protocol, a.serve)
	h.Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		a.ensure(c.RemotePeer())
	}})
	return a, nil
}

// Close stops starting handshakes and waits for those running.
func (a *Admission) Close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.h.RemoveStreamHandler(Protocol)
	a.wg.Wait()
}

// Admitted reports whether p is admitted now.
func (a *Admission) Admitted(p peer.ID) bool {
	if p == a.h.ID() {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.peers[p]
	return e != nil && a.opts.Now().Before(e.id.NotAfter)
}

// Identity is p's verified certificate, if it is admitted.
func (a *Admission) Identity(p peer.ID) (auth.NodeIdentity, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.peers[p]
	if e == nil {
		return auth.NodeIdentity{}, false
	}
	return e.id, true
}

// Wait waits until p is admitted (running the handshake if none runs),
// refused, or ctx ends, and reports whether p is admitted.
func (a *Admission) Wait(ctx context.Context, p peer.ID) bool {
	for {
		if a.Admitted(p) {
			return true
		}
		ch := a.ensure(p)
		if ch == nil {
			return a.Admitted(p)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return a.Admitted(p)
		}
		if !a.Admitted(p) {
			return false
		}
	}
}

// ensure starts a handshake with p unless it is admitted, refused or
// already shaking hands; it returns the channel closed when the running
// handshake ends, nil when none runs.
func (a *Admission) ensure(p peer.ID) chan struct{} {
	if p == a.h.ID() {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch := a.pending[p]; ch != nil {
		return ch
	}
	now := a.opts.Now()
	if e := a.peers[p]; a.closed || (e != nil && now.Before(e.id.NotAfter)) || now.Before(a.refused[p]) {
		return nil
	}
	ch := make(chan struct{})
	a.pending[p] = ch
	a.wg.Add(1)
	go a.handshake(p, ch)
	return ch
}

// handshake runs the handshake with p as the side that opens it.
func (a *Admission) handshake(p peer.ID, done chan struct{}) {
	defer a.wg.Done()
	defer a.finish(p, done)
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.Timeout)
	defer cancel()
	s, err := a.h.NewStream(network.WithAllowLimitedConn(ctx, "admission"), p, Protocol)
	if err != nil {
		if a.h.Network().Connectedness(p) == network.Connected {
			a.refuse(p, ReasonNoCertificate, fmt.Sprintf("no admission handshake: %v", err))
		}
		return
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(a.opts.Timeout))
	if err := wire.WriteFrame(s, a.helloBytes()); err != nil {
		return
	}
	b, err := wire.ReadFrame(bufio.NewReader(s), maxHello)
	if err != nil {
		a.refuse(p, ReasonNoCertificate, fmt.Sprintf("admission handshake: %v", err))
		return
	}
	// Closing tells the serving side that its hello arrived: only then
	// may it refuse us and cut the connection.
	_ = s.Close()
	a.check(p, b)
}

// serve answers a handshake a peer opened.
func (a *Admission) serve(s network.Stream) {
	defer s.Close()
	p := s.Conn().RemotePeer()
	_ = s.SetDeadline(time.Now().Add(a.opts.Timeout))
	b, err := wire.ReadFrame(bufio.NewReader(s), maxHello)
	if err != nil {
		_ = s.Reset()
		return
	}
	if err := wire.WriteFrame(s, a.helloBytes()); err != nil {
		_ = s.Reset()
		return
	}
	// Wait for the opener to close (it has read our hello) before a
	// refusal cuts the connection, so that a peer of another authority
	// learns why rather than seeing a broken handshake.
	_, _ = io.Copy(io.Discard, io.LimitReader(s, 1))
	a.check(p, b)
}

func (a *Admission) finish(p peer.ID, done chan struct{}) {
	a.mu.Lock()
	if a.pending[p] == done {
		delete(a.pending, p)
	}
	a.mu.Unlock()
	close(done)
}

// helloBytes is this node's admission message.
func (a *Admission) helloBytes() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return hello{chain: a.opts.Chain, revs: a.book.Revocations()}.encode()
}

// check verifies a peer's admission message: it admits the peer, and
// takes its revocations, or refuses it.
func (a *Admission) check(p peer.ID, b []byte) {
	hl, err := decodeHello(b)
	if err != nil {
		a.refuse(p, ReasonCertificate, err.Error())
		return
	}
	if err := a.admit(p, hl.chain); err != nil {
		a.refuse(p, ReasonCertificate, err.Error())
		return
	}
	for _, r := range hl.revs {
		if _, err := a.Revoke(r); err != nil {
			a.opts.Refused(ReasonRevocation)
			log.Debugw("revocation from a peer refused", "peer", p, "err", err)
		}
	}
}

// admit verifies ch for p and admits p.
func (a *Admission) admit(p peer.ID, ch auth.Chain) error {
	enc := ch.Encode()
	digest := sha256.Sum256(enc)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	if e := a.peers[p]; e != nil && e.digest == digest && now.Before(e.id.NotAfter) {
		return nil
	}
	id, err := a.book.VerifyNode(ch, p.String(), now)
	if err != nil {
		return err
	}
	if a.peers[p] == nil {
		log.Infow("peer admitted", "peer", p, "site", id.Site, "until", id.NotAfter.Format(time.RFC3339))
	}
	a.peers[p] = &admitted{id: id, chain: ch, digest: digest}
	delete(a.refused, p)
	return nil
}

// AdmitAdvert admits the author of an advert from the certificate chain
// it carries (its encoding).
func (a *Admission) AdmitAdvert(p peer.ID, chain []byte) error {
	digest := sha256.Sum256(chain)
	a.mu.Lock()
	if e := a.peers[p]; e != nil && e.digest == digest && a.opts.Now().Before(e.id.NotAfter) {
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()
	if len(chain) == 0 {
		a.opts.Refused(ReasonAdvert)
		return errors.New("advert without a certificate")
	}
	ch, err := auth.DecodeChain(chain)
	if err == nil {
		err = a.admit(p, ch)
	}
	if err != nil {
		a.opts.Refused(ReasonAdvert)
		return err
	}
	return nil
}

// refuse drops p: it is disconnected and its connections refused for a
// while.
func (a *Admission) refuse(p peer.ID, reason, why string) {
	a.mu.Lock()
	_, was := a.peers[p]
	delete(a.peers, p)
	a.refused[p] = a.opts.Now().Add(refuseFor)
	a.mu.Unlock()
	a.opts.Refused(reason)
	log.Infow("peer refused", "peer", p, "reason", reason, "why", why)
	a.opts.Block(p, refuseFor)
	_ = a.h.Network().ClosePeer(p)
	if was {
		a.opts.Dropped(p)
	}
}

// Revoke takes a revocation: it checks it, keeps it, and drops every
// admitted peer it withdraws. It reports whether it was new.
func (a *Admission) Revoke(r auth.Revocation) (bool, error) {
	a.mu.Lock()
	now := a.opts.Now()
	added, err := a.book.Revoke(r, now)
	var gone []peer.ID
	if added {
		for p, e := range a.peers {
			if _, err := a.book.VerifyNode(e.chain, p.String(), now); err != nil {
				gone = append(gone, p)
			}
		}
	}
	self := a.h.ID()
	selfRevoked := added && a.book.VerifyChain(a.opts.Chain, now) != nil
	a.mu.Unlock()
	if err != nil || !added {
		return false, err
	}
	log.Infow("revocation taken", "target", r.Target, "time", r.Time.Format(time.RFC3339))
	if selfRevoked {
		log.Errorw("this node's own certificate is revoked: peers will refuse it", "peer", self)
	}
	a.opts.Learned(r)
	for _, p := range gone {
		a.refuse(p, ReasonRevoked, "certificate revoked by "+r.Target)
	}
	return true, nil
}

// Revocations lists the revocations known, oldest first.
func (a *Admission) Revocations() []auth.Revocation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.book.Revocations()
}

// Sweep drops the admitted peers whose certificate expired by now.
func (a *Admission) Sweep() {
	a.mu.Lock()
	now := a.opts.Now()
	var gone []peer.ID
	for p, e := range a.peers {
		if !now.Before(e.id.NotAfter) {
			gone = append(gone, p)
		}
	}
	a.mu.Unlock()
	for _, p := range gone {
		a.refuse(p, ReasonRevoked, "certificate expired")
	}
}

// AppScore is GossipSub's application score of a peer: 0 when admitted,
// far below the graylist threshold otherwise, so that a peer GossipSub
// meets before its admission is not in any mesh.
func (a *Admission) AppScore(p peer.ID) float64 {
	if a.Admitted(p) {
		return 0
	}
	return -1e6
}

// Verify runs a check against the admission's book (its authority and
// every revocation it took), under its lock.
func (a *Admission) Verify(check func(*auth.Book) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return check(a.book)
}

// VerifySession checks a dashboard sign-in to node (auth.VerifySession).
func (a *Admission) VerifySession(raw []byte, node string) (auth.Identity, error) {
	t, err := auth.DecodeToken(raw)
	if err != nil {
		return auth.Identity{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.book.VerifySession(&t, node, a.opts.Now())
}

// VerifyToken checks a request credential (an encoded market/auth token)
// about job, naming one of acts when any are given, against the
// admission's book, and returns its user and the action it names.
func (a *Admission) VerifyToken(raw []byte, job string, acts ...auth.Action) (auth.Identity, auth.Action, error) {
	t, err := auth.DecodeToken(raw)
	if err != nil {
		return auth.Identity{}, "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	id, err := a.book.VerifyToken(&t, job, a.opts.Now(), acts...)
	return id, t.Action, err
}
