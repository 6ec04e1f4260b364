package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/admission"
	"github.com/agora-sched/agora/node/api"
)

// The node's side of trust: market/auth has the rules, node/admission
// the handshake, the configuration and the revocations' storage; here
// they are wired to the node's host, gossip and metrics.

// trust is a node's trust state; nil on a node without --trust.
type trust struct {
	book  *auth.Book // the authority and the stored revocations, at start
	chain auth.Chain // this node's certificate chain
	revs  *admission.Revocations
	adm   *admission.Admission
	topic *admission.Topic
	// replicas checks pushed job records, under the admission's lock
	// (Admission.Verify).
	replicas market.ReplicaChecker
}

// loadTrust reads --trust and --cert and the stored revocations, and
// refuses an open node's listen address beyond loopback unless --insecure.
func (n *Node) loadTrust() error {
	cfg := n.cfg
	if cfg.Trust == "" {
		if cfg.CertFile != "" {
			return configErr("--cert needs --trust (the authority that signed it)")
		}
		return nil
	}
	book, chain, err := admission.Load(cfg.Trust, cfg.CertFile)
	if err != nil {
		return &ConfigError{Err: err}
	}
	// One memo of verified ticket signatures for the admission layer's
	// book (it checks job records pushed here) and the market's (it checks
	// calls for bids): one signature check per job serves both.
	t := &trust{book: book, chain: chain, revs: admission.NewRevocations(n.store)}
	n.checks = newTicketChecks()
	book.ShareTickets(n.checks)
	if err := t.revs.LoadInto(book, time.Now()); err != nil {
		return fmt.Errorf("node: read revocations: %w", err)
	}
	n.trust = t
	exp := chain.Expiry()
	n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agora_certificate_expiry_timestamp_seconds",
		Help: "When this node's certificate chain expires (Unix time): renew it before (agora admit --renew) and restart the node."},
		func() float64 { return float64(exp.Unix()) }))
	warnExpiry(exp, time.Now())
	go n.expiryLoop(exp)
	return nil
}

// warnExpiry logs a warning when the node's certificate expires within
// auth.RenewWarning: after it, no peer admits the node.
func warnExpiry(exp, now time.Time) {
	if left := exp.Sub(now); left < auth.RenewWarning {
		log.Warnw("this node's certificate expires soon: renew it (agora admit --renew) and restart the node", "expires", exp.UTC().Format(time.RFC3339), "in", left.Round(time.Minute))
	}
}

// expiryLoop repeats the warning daily while the node runs.
func (n *Node) expiryLoop(exp time.Time) {
	n.every(24*time.Hour, func(now time.Time) { warnExpiry(exp, now) })
}

// startAdmission starts admitting peers on the node's host; every other
// protocol then runs on n.ph, the admission's guarded host.
func (n *Node) startAdmission() error {
	n.ph = n.host
	if n.trust == nil {
		return nil
	}
	adm, err := admission.New(n.host, admission.Options{Book: n.trust.book, Chain: n.trust.chain,
		Block:   n.gater.BlockFor,
		Refused: n.countRefused,
		Dropped: n.peerDropped,
		Learned: n.revocationLearned})
	if err != nil {
		return configErr("--cert %s: %v", n.cfg.CertFile, err)
	}
	n.trust.adm, n.ph = adm, adm.Host()
	n.relayAdm.Store(adm)
	return nil
}

// relayAllowed says whether p may use this node's relay: anyone in an
// open network; in one with an authority, admitted members only (waiting
// briefly for a handshake under way, as a reservation follows a fresh
// connection). Before admission starts, nobody.
func (n *Node) relayAllowed(p peer.ID) bool {
	if n.cfg.Trust == "" {
		return true
	}
	adm := n.relayAdm.Load()
	if adm == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return adm.Wait(ctx, p)
}

// revocationLearned keeps a new revocation and hands it to the market
// (through the loop, which runs it once the market exists).
func (n *Node) revocationLearned(r auth.Revocation) {
	n.trust.revs.Keep(r)
	n.deliver(func() { n.mkt.Revoked(time.Now(), r) })
}

// marketBook is the market's trust: the authority and every revocation
// the admission layer holds now; nil without --trust.
func (n *Node) marketBook() *auth.Book {
	if n.trust == nil {
		return nil
	}
	b := auth.NewBook(n.trust.book.Authority())
	b.ShareTickets(n.trust.book.Tickets())
	now := time.Now()
	for _, r := range n.trust.adm.Revocations() {
		if _, err := b.Revoke(r, now); err != nil {
			log.Warnw("revocation dropped", "target", r.Target, "err", err)
		}
	}
	return b
}

// joinRevocations joins the revocations topic.
func (n *Node) joinRevocations() error {
	if n.trust == nil {
		return nil
	}
	t, err := n.trust.adm.JoinRevocations(n.ctx, n.ps, n.cfg.Network)
	n.trust.topic = t
	return err
}

// closeTrust leaves the revocations topic and stops admitting.
func (n *Node) closeTrust() {
	if n.trust == nil {
		return
	}
	if n.trust.topic != nil {
		n.trust.topic.Close()
	}
	if n.trust.adm != nil {
		n.trust.adm.Close()
	}
}

// sweepTrust drops the peers whose certificate expired.
func (n *Node) sweepTrust() {
	if n.trust != nil && n.trust.adm != nil {
		n.trust.adm.Sweep()
	}
}

// admitted is whether a peer may talk to this node's market: always
// without an authority.
func (n *Node) admitted(p peer.ID) bool {
	return n.trust == nil || n.trust.adm.Admitted(p)
}

// appScore is GossipSub's application score of a peer.
func (n *Node) appScore() func(peer.ID) float64 {
	if n.trust == nil {
		return nil
	}
	return n.trust.adm.AppScore
}

// peerDropped forgets a peer whose certificate no longer holds: it
// leaves the view at once, and the market places its tasks again.
func (n *Node) peerDropped(p peer.ID) {
	if n.gossip != nil {
		n.gossip.Forget(p)
	}
}

// errNoTrust answers what only a node with an authority can do.
var errNoTrust = errors.New("this node checks no certificates (it was started without --trust)")

// Revoke takes a revocation handed to the node's API, keeps it and
// spreads it to the network. It reports the target and whether the
// revocation was new.
func (n *Node) Revoke(ctx context.Context, data []byte) (string, bool, error) {
	if n.trust == nil {
		return "", false, fmt.Errorf("%w: %v", api.ErrRefused, errNoTrust)
	}
	r, err := auth.DecodeRevocation(data)
	if err != nil {
		return "", false, fmt.Errorf("%w: %v", api.ErrRefused, err)
	}
	added, err := n.trust.adm.Revoke(r)
	if err != nil {
		return r.Target, false, fmt.Errorf("%w: %v", api.ErrRefused, err)
	}
	if err := n.trust.topic.Publish(ctx, r); err != nil {
		return r.Target, added, fmt.Errorf("taken here, but not spread: %w", err)
	}
	return r.Target, added, nil
}

// InitIdentity creates the node's identity in dataDir (or reads the one
// there) and returns its peer ID, for the authority to admit it before
// it first starts.
func InitIdentity(dataDir string) (peer.ID, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", configErr("data dir %s: %v", dataDir, err)
	}
	k, err := admission.LoadIdentity(dataDir)
	if err != nil {
		return "", &ConfigError{Err: err}
	}
	return peer.IDFromPrivateKey(k)
}

// checkReplica says why a job-record copy a peer pushed must not be kept
// (market.CheckReplica), against the node's current revocations; a
// refusal is counted.
func (n *Node) checkReplica(from market.NodeID, rec market.JobRecord, held *market.HeldCopy) error {
	var err error
	if n.trust == nil {
		err = market.CheckReplica(nil, time.Now(), from, rec, held)
	} else {
		err = n.trust.adm.Verify(func(b *auth.Book) error { return n.trust.replicas.Check(b, time.Now(), from, rec, held) })
	}
	if err != nil {
		n.countRefused(market.RefuseRecord)
	}
	return err
}

// countRefused counts a refusal on /metrics (agora_refused_total) by
// its reason (docs/security.md).
func (n *Node) countRefused(reason string) { n.met.refused.WithLabelValues(reason).Inc() }

// cutOff disconnects a peer that flooded adverts (gossip Config.Flooded)
// or sent invalid messages until GossipSub graylisted it (gossip.CutOff),
// and refuses it for a minute.
func (n *Node) cutOff(p peer.ID) {
	log.Warnw("peer cut off for a minute: it flooded or sent invalid messages", "peer", p)
	n.countRefused("flood")
	n.gater.BlockFor(p, time.Minute)
	_ = n.host.Network().ClosePeer(p)
}
