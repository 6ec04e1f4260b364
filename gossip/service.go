package gossip

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market/auth"
)

var log = logging.Logger("gossip")

// DefaultInterval is the advert period when Config.Interval is unset.
const DefaultInterval = 2 * time.Second

// DefaultRelayDelay is how long a node holds another node's advert before
// relaying it when Config.RelayDelay is zero. See Config.RelayDelay.
const DefaultRelayDelay = 2 * time.Millisecond

// minNudgeSpacing bounds how often a large change may trigger an
// out-of-band advert.
const minNudgeSpacing = 100 * time.Millisecond

// AdvertTopic is the pubsub topic carrying adverts in network name.
func AdvertTopic(network string) string { return "agora/" + network + "/adverts/1" }

// Config configures a Service.
type Config struct {
	// Network names the Agora network; it is part of every topic name.
	Network string
	// Interval is the advert period (DefaultInterval when zero).
	Interval time.Duration
	// Misses is how many silent intervals mark a peer gone.
	Misses int
	// Boot is this node's boot counter; it orders adverts across restarts.
	Boot uint64
	// Local returns the node's current advert; Service fills in Peer, Boot,
	// Seq, Time and Interval.
	Local func() Advert
	// OnChange, when set, is called (without locks held) for every advert
	// that joined, updated or left the view.
	OnChange func(Change, Advert)
	// OnGone, when set, is called for each peer the view expired.
	OnGone func(peer.ID)
	// Metrics receives counts; nil creates an unregistered set.
	Metrics *Metrics
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// RelayDelay is how long the validator holds a valid advert of another
	// node before GossipSub relays it to the mesh (DefaultRelayDelay when
	// zero; negative relays at once). Every receiver sends IDONTWANT for
	// the advert to its mesh peers as soon as it arrives, before
	// validation (GossipSubParams lowers the library's IDONTWANT size
	// threshold so that adverts qualify); holding the relay a little
	// longer than one hop's latency lets those IDONTWANTs arrive first, so
	// a node skips the mesh peers that already have the advert. Without
	// the hold every node relays at once to all its mesh peers and
	// receives about one copy per mesh peer. Adverts are periodic and
	// read seconds later, so a few milliseconds per hop cost nothing.
	RelayDelay time.Duration
	// Cert is this node's certificate chain, carried in its adverts, in a
	// network with an authority.
	Cert []byte
	// LeaveWatch, when set (and installed in the topic's pubsub), lets
	// Leave return once its advert was written to a peer rather than
	// when it was queued.
	LeaveWatch *LeaveWatch
	// Admit, when set, checks the certificate chain an advert carries for
	// its author; an advert it refuses is rejected, or only dropped when
	// the error is auth.ErrUntimely (revoked, expired: the relay that
	// passed it on may not know yet).
	Admit func(peer.ID, []byte) error
	// Flooded is told, off the validator, of an author that delivered
	// floodCut adverts of its own beyond its allowance: the node cuts it
	// off. Nil: nobody is told.
	Flooded func(peer.ID)
}

// Flood control: an author's adverts pass at most floodRate a second on
// average, floodBurst at once. A node publishes once an interval and on
// large changes at most every minNudgeSpacing, well under it; the rest
// are dropped before they are decoded and not relayed. They are ignored,
// not rejected: GossipSub would also penalise every honest peer that
// relayed the same advert within its own allowance while it was being
// validated here. The author itself is counted instead: floodCut of its
// own adverts beyond the allowance, delivered by itself, and Flooded is
// told.
const (
	floodRate  = 20 // a second: twice a nudge every minNudgeSpacing
	floodBurst = 20
	// floodCut is how many adverts beyond its allowance an author may
	// deliver itself, the count halving every floodForget, before
	// Flooded is told: an honest node stays under its allowance, bar a
	// few old adverts a peer asked it for again.
	floodCut    = 50
	floodForget = 10 * time.Second
)

// bucket is an author's advert allowance.
type bucket struct {
	tokens  float64
	at      time.Time
	strikes float64   // own adverts delivered beyond the allowance, decaying
	struck  time.Time // when strikes last changed
	told    bool      // Flooded was told
}

// Service publishes this node's adverts and maintains the membership view
// from everyone else's.
type Service struct {
	cfg   Config
	h     host.Host
	ps    *pubsub.PubSub
	topic *pubsub.Topic
	sub   *pubsub.Subscription

	mu       sync.Mutex
	view     *View
	seq      uint64
	last     Advert
	lastSent time.Time

	buckets map[peer.ID]*bucket // guarded by mu

	nudge  chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New joins the advert topic of cfg.Network on ps and registers the advert
// validator. Call Start to begin publishing and receiving.
func New(h host.Host, ps *pubsub.PubSub, cfg Config) (*Service, error) {
	if cfg.Network == "" {
		return nil, errors.New("gossip: network name is empty")
	}
	if cfg.Local == nil {
		return nil, errors.New("gossip: Config.Local is nil")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RelayDelay == 0 {
		cfg.RelayDelay = DefaultRelayDelay
	}
	s := &Service{cfg: cfg, h: h, ps: ps, view: newServiceView(h.ID(), cfg), nudge: make(chan struct{}, 1), buckets: map[peer.ID]*bucket{}}
	name := AdvertTopic(cfg.Network)
	if err := ps.RegisterTopicValidator(name, s.validate); err != nil {
		return nil, fmt.Errorf("gossip: register validator: %w", err)
	}
	t, err := ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("gossip: join %s: %w", name, err)
	}
	sub, err := t.Subscribe()
	if err != nil {
		return nil, fmt.Errorf("gossip: subscribe %s: %w", name, err)
	}
	s.topic, s.sub = t, sub
	return s, nil
}

// validate is the topic validator: it rejects malformed, oversized and
// mis-attributed adverts and ignores stale ones. It holds a valid advert of
// another node for Config.RelayDelay before accepting it (GossipSub runs
// topic validators on their own goroutines, so the hold delays only this
// advert's relay and delivery).
func (s *Service) validate(ctx context.Context, via peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	from := msg.GetFrom()
	if from == s.h.ID() {
		return pubsub.ValidationAccept
	}
	if !s.allow(from) {
		s.cfg.Metrics.Dropped.WithLabelValues("flood").Inc()
		if via == from && s.strike(from) && s.cfg.Flooded != nil {
			go s.cfg.Flooded(from)
		}
		return pubsub.ValidationIgnore
	}
	a, err := DecodeAdvert(msg.Data)
	if err != nil {
		s.cfg.Metrics.Dropped.WithLabelValues("malformed").Inc()
		log.Debugw("dropping advert", "from", from, "err", err)
		return pubsub.ValidationReject
	}
	if a.Peer != from {
		s.cfg.Metrics.Dropped.WithLabelValues("misattributed").Inc()
		log.Debugw("dropping advert signed by another peer", "from", from, "claims", a.Peer)
		return pubsub.ValidationReject
	}
	s.mu.Lock()
	m, ok := s.view.Get(a.Peer)
	s.mu.Unlock()
	if ok && !a.Newer(m.Advert) {
		s.cfg.Metrics.Dropped.WithLabelValues("stale").Inc()
		return pubsub.ValidationIgnore
	}
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(from, a.Cert); err != nil {
			s.cfg.Metrics.Dropped.WithLabelValues("unadmitted").Inc()
			log.Debugw("dropping advert of an unadmitted node", "from", from, "err", err)
			if errors.Is(err, auth.ErrUntimely) {
				return pubsub.ValidationIgnore // a relay may not have the revocation yet
			}
			return pubsub.ValidationReject
		}
	}
	msg.ValidatorData = a
	if s.cfg.RelayDelay > 0 {
		t := time.NewTimer(s.cfg.RelayDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return pubsub.ValidationIgnore
		}
	}
	return pubsub.ValidationAccept
}

// strike counts an advert an author delivered beyond its allowance and
// reports whether the author has just reached floodCut.
func (s *Service) strike(from peer.ID) bool {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[from]
	if b == nil {
		return false
	}
	if !b.struck.IsZero() {
		b.strikes *= math.Pow(0.5, now.Sub(b.struck).Seconds()/floodForget.Seconds())
	}
	b.strikes++
	b.struck = now
	if b.strikes >= floodCut && !b.told {
		b.told = true
		return true
	}
	if b.strikes < floodCut/2 {
		b.told = false
	}
	return false
}

// allow takes one of an author's advert allowance; false when spent.
func (s *Service) allow(from peer.ID) bool {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[from]
	if b == nil {
		b = &bucket{tokens: floodBurst, at: now}
		s.buckets[from] = b
	}
	b.tokens = min(floodBurst, b.tokens+now.Sub(b.at).Seconds()*floodRate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Forget drops a peer from the view at once (its certificate was
// revoked, say) and reports it gone.
func (s *Service) Forget(id peer.ID) {
	s.mu.Lock()
	removed := s.view.Remove(id)
	delete(s.buckets, id)
	n := s.view.Len()
	s.mu.Unlock()
	s.cfg.Metrics.Peers.Set(float64(n))
	if removed && s.cfg.OnGone != nil {
		s.cfg.OnGone(id)
	}
}

// Start launches the receive loop and the publish/expiry loop.
func (s *Service) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(2)
	go s.receive(ctx)
	go s.tick(ctx)
}

func (s *Service) receive(ctx context.Context) {
	defer s.wg.Done()
	for {
		msg, err := s.sub.Next(ctx)
		if err != nil {
			return
		}
		a, ok := msg.ValidatorData.(Advert)
		if !ok || a.Peer == s.h.ID() {
			continue
		}
		s.cfg.Metrics.Received.Inc()
		s.mu.Lock()
		ch := s.view.Observe(a, s.cfg.Now())
		n := s.view.Len()
		s.mu.Unlock()
		s.cfg.Metrics.Peers.Set(float64(n))
		if ch != Ignored && s.cfg.OnChange != nil {
			s.cfg.OnChange(ch, a)
		}
	}
}

func (s *Service) tick(ctx context.Context) {
	defer s.wg.Done()
	pub := time.NewTicker(s.cfg.Interval)
	defer pub.Stop()
	sweep := time.NewTicker(s.cfg.Interval / 4)
	defer sweep.Stop()
	s.publish(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-pub.C:
			s.publish(ctx, false)
		case <-s.nudge:
			s.publish(ctx, true)
		case <-sweep.C:
			s.expire()
		}
	}
}

func (s *Service) expire() {
	s.mu.Lock()
	now := s.cfg.Now()
	for id, b := range s.buckets {
		if now.Sub(b.at) > 10*s.cfg.Interval {
			delete(s.buckets, id) // idle: its allowance is full again anyway
		}
	}
	gone, paused := s.view.Expire(now)
	n := s.view.Len()
	s.mu.Unlock()
	if paused > 0 {
		log.Warnw("this node stood still: its peers' silence meanwhile not counted", "for", paused.Round(time.Millisecond))
	}
	s.cfg.Metrics.Peers.Set(float64(n))
	for _, id := range gone {
		log.Infow("peer gone: adverts missed", "peer", id)
		if s.cfg.OnGone != nil {
			s.cfg.OnGone(id)
		}
	}
}

// Nudge asks the service to publish at once if the local advert changed a
// lot since the last one (see LargeChange). It never blocks.
func (s *Service) Nudge() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// stamp fills the service-owned fields of the local advert.
func (s *Service) stamp(a Advert) Advert {
	s.seq++
	a.Peer, a.Boot, a.Seq, a.Time, a.Interval = s.h.ID(), s.cfg.Boot, s.seq, s.cfg.Now(), s.cfg.Interval
	a.Cert = s.cfg.Cert
	if len(a.Addrs) == 0 {
		a.Addrs = s.h.Addrs()
	}
	if len(a.Addrs) > MaxAddrs {
		a.Addrs = a.Addrs[:MaxAddrs]
	}
	return a
}

func (s *Service) publish(ctx context.Context, onlyIfLarge bool) {
	cur := s.cfg.Local()
	s.mu.Lock()
	if onlyIfLarge && (s.cfg.Now().Sub(s.lastSent) < minNudgeSpacing || !LargeChange(s.last, cur)) {
		s.mu.Unlock()
		return
	}
	a := s.stamp(cur)
	s.last, s.lastSent = a, s.cfg.Now()
	s.mu.Unlock()
	s.send(ctx, a)
}

func (s *Service) send(ctx context.Context, a Advert) {
	b, err := a.Encode()
	if err != nil {
		log.Errorw("cannot encode local advert", "err", err)
		return
	}
	if err := s.topic.Publish(ctx, b); err != nil {
		if ctx.Err() == nil {
			log.Warnw("publish advert", "err", err)
		}
		return
	}
	s.cfg.Metrics.Sent.Inc()
}

// Leave publishes a final advert marked leaving, so peers drop this node at
// once rather than after missed intervals. With a LeaveWatch it returns
// once a peer was handed the advert (or none is subscribed, or ctx ends).
func (s *Service) Leave(ctx context.Context) {
	s.mu.Lock()
	a := s.stamp(s.cfg.Local())
	a.Leaving = true
	s.mu.Unlock()
	b, err := a.Encode()
	if err != nil {
		log.Errorw("cannot encode local advert", "err", err)
		return
	}
	var sent <-chan struct{}
	if w := s.cfg.LeaveWatch; w != nil && len(s.topic.ListPeers()) > 0 {
		sent = w.expect(b)
	}
	if err := s.topic.Publish(ctx, b); err != nil {
		if ctx.Err() == nil {
			log.Warnw("publish leaving advert", "err", err)
		}
		return
	}
	s.cfg.Metrics.Sent.Inc()
	if sent != nil {
		select {
		case <-sent:
		case <-ctx.Done():
			log.Warnw("leaving advert not written to any peer in time", "err", ctx.Err())
		}
	}
}

// Touch notes that peer id was just heard from directly (View.Touch).
func (s *Service) Touch(id peer.ID) {
	s.mu.Lock()
	s.view.Touch(id, s.cfg.Now())
	s.mu.Unlock()
}

// Members returns the live peers, ordered by peer ID.
func (s *Service) Members() []Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.Members()
}

// Member returns one live peer.
func (s *Service) Member(id peer.ID) (Member, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.Get(id)
}

// Close stops the loops and leaves the topic.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.sub.Cancel()
	s.wg.Wait()
	_ = s.ps.UnregisterTopicValidator(AdvertTopic(s.cfg.Network))
	return s.topic.Close()
}

// newServiceView is the service's view: the sweep runs every quarter
// interval, so a whole interval between two sweeps is this node's own
// pause, not its peers' silence (View.SetPauseAfter).
func newServiceView(self peer.ID, cfg Config) *View {
	v := NewView(self, cfg.Misses)
	v.SetPauseAfter(cfg.Interval)
	return v
}
