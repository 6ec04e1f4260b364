package gossip

import (
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Peer scoring. GossipSub keeps a score for every peer it talks to;
// below GraylistThreshold a peer's RPCs are dropped before any message
// in them is looked at (no signature check, no validator), below
// PublishThreshold nothing is published to it, below 0 it leaves every
// mesh. Agora scores two things:
//
//   - The application score: a node with an authority gives every peer
//     it has not admitted a score far below the graylist (the admission
//     layer's AppScore), so an outsider's RPCs cost nothing; without an
//     authority it is 0 for everyone.
//   - Invalid messages (P4) on Agora's topics: every message a validator
//     rejects — malformed, mis-attributed, a revocation that does not
//     verify — costs the peer that delivered it InvalidWeight times the
//     square of its decaying count, so a dozen of them graylist it for a
//     while. GossipSub also charges a rejected message to every peer that
//     delivered a copy while it was being validated, so validators reject
//     only what no honest relay can have passed on: adverts beyond their
//     author's allowance are ignored instead (Service counts them against
//     the author, and Config.Flooded cuts it off), and so are adverts of
//     an author revoked here (auth.ErrUntimely) that a relay may have
//     accepted before the revocation reached it.
//
// Nothing rewards a peer (P1-P3 off): in a small cluster of trusted
// members every peer is in the mesh anyway, and rewards would only
// raise a flooder's budget before it is graylisted. IP colocation (P6)
// is off: test clusters, and some deployments, run many nodes on one
// address.
const (
	InvalidWeight      = -100
	invalidDecay       = 0.9 // per DecayInterval: a count halves in about 7 s
	GraylistThreshold  = -5000
	PublishThreshold   = -2000
	GossipThreshold    = -1000
	behaviourWeight    = -1
	behaviourThreshold = 10
	behaviourDecay     = 0.9
)

// PeerScore is the score configuration for a network's topics; app is the
// application score (nil: 0 for every peer).
func PeerScore(network string, app func(peer.ID) float64) (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds) {
	if app == nil {
		app = func(peer.ID) float64 { return 0 }
	}
	topic := func() *pubsub.TopicScoreParams {
		return &pubsub.TopicScoreParams{
			SkipAtomicValidation:           true,
			TopicWeight:                    1,
			TimeInMeshQuantum:              time.Second, // unused (weight 0), but the library divides by it
			InvalidMessageDeliveriesWeight: InvalidWeight,
			InvalidMessageDeliveriesDecay:  invalidDecay,
		}
	}
	p := &pubsub.PeerScoreParams{
		SkipAtomicValidation:      true,
		Topics:                    map[string]*pubsub.TopicScoreParams{},
		AppSpecificScore:          app,
		AppSpecificWeight:         1,
		BehaviourPenaltyWeight:    behaviourWeight,
		BehaviourPenaltyThreshold: behaviourThreshold,
		BehaviourPenaltyDecay:     behaviourDecay,
		DecayInterval:             time.Second,
		DecayToZero:               0.01,
		RetainScore:               10 * time.Minute,
	}
	for _, t := range []string{AdvertTopic(network), "agora/" + network + "/jobs/1", "agora/" + network + "/revocations/1", "agora/" + network + "/usage/1"} {
		p.Topics[t] = topic()
	}
	th := &pubsub.PeerScoreThresholds{
		SkipAtomicValidation: true,
		GossipThreshold:      GossipThreshold,
		PublishThreshold:     PublishThreshold,
		GraylistThreshold:    GraylistThreshold,
	}
	return p, th
}

// Misbehaving peers. A peer whose score, leaving out the application
// score, falls below GraylistThreshold has flooded or sent invalid
// messages: GossipSub already drops its RPCs, but only after reading and
// decoding them, so a flood still costs every node it reaches. CutOff
// has the node cut it off instead (close its connections and refuse new
// ones for a while), checking every CutOffEvery.
const CutOffEvery = 250 * time.Millisecond

// CutOff is the pubsub option that calls cut, off the router's
// goroutines, for each peer whose own behaviour put it below the
// graylist; a peer is reported again only after a minute.
func CutOff(cut func(peer.ID)) pubsub.Option {
	var mu sync.Mutex
	last := map[peer.ID]time.Time{}
	inspect := func(scores map[peer.ID]*pubsub.PeerScoreSnapshot) {
		now := time.Now()
		for p, s := range scores {
			if s.Score-s.AppSpecificScore >= GraylistThreshold {
				continue
			}
			mu.Lock()
			fresh := now.Sub(last[p]) > time.Minute
			if fresh {
				last[p] = now
			}
			mu.Unlock()
			if fresh {
				inv := 0.0
				for _, t := range s.Topics {
					inv += t.InvalidMessageDeliveries
				}
				log.Warnw("peer graylisted for its own behaviour", "peer", p, "score", s.Score, "invalid", inv, "behaviour", s.BehaviourPenalty)
				cut(p)
			}
		}
	}
	return pubsub.WithPeerScoreInspect(pubsub.ExtendedPeerScoreInspectFn(inspect), CutOffEvery)
}
