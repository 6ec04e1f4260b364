package transport

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
)

// TestValidateCFP: a broadcast call for bids that is not its publisher's
// CFP is rejected (the relay's score falls: no honest relay passes it
// on); one whose author is not admitted here is only dropped, since an
// honest relay may have admitted it before a revocation reached it.
func TestValidateCFP(t *testing.T) {
	author, other := test.RandPeerIDFatal(t), test.RandPeerIDFatal(t)
	admitted := map[peer.ID]bool{author: true}
	tr := &Transport{opts: Options{Admitted: func(p peer.ID) bool { return admitted[p] }}}
	key := market.TaskKey{Job: "j-1", Task: "t"}
	cfpOf := func(manager peer.ID) []byte {
		b, err := wire.Encode(market.CFP{Auction: market.AuctionID{Key: key, Epoch: 1}, Manager: market.NodeID(manager.String()),
			Task: market.TaskOffer{Key: key}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	notCFP, err := wire.Encode(market.NoBid{Auction: market.AuctionID{Key: key, Epoch: 1}, Bidder: market.NodeID(author.String())})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		from     peer.ID
		data     []byte
		admitted bool
		want     pubsub.ValidationResult
	}{
		{"the author's call, admitted", author, cfpOf(author), true, pubsub.ValidationAccept},
		{"the author's call, revoked here", author, cfpOf(author), false, pubsub.ValidationIgnore},
		{"another manager's call", author, cfpOf(other), true, pubsub.ValidationReject},
		{"not a call for bids", author, notCFP, true, pubsub.ValidationReject},
		{"garbage", author, []byte{0xff, 0x01}, true, pubsub.ValidationReject},
	} {
		admitted[author] = tc.admitted
		m := &pubsub.Message{Message: &pb.Message{From: []byte(tc.from), Data: tc.data}}
		if got := tr.validateCFP(m); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if _, ok := m.ValidatorData.(market.CFP); ok != (tc.want == pubsub.ValidationAccept) {
			t.Errorf("%s: validator data %v", tc.name, m.ValidatorData)
		}
	}
}
