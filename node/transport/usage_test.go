package transport

import (
	"encoding/json"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/fairshare"
)

// TestValidateUsage: each usage topic takes only its own kind of
// summary — a delta on usage/1 would be read by a node of the release
// before deltas as a full summary, dropping every user it does not
// name — of its publisher's, from an admitted peer.
func TestValidateUsage(t *testing.T) {
	author, other := test.RandPeerIDFatal(t), test.RandPeerIDFatal(t)
	admitted := map[peer.ID]bool{author: true}
	tr := &Transport{opts: Options{Admitted: func(p peer.ID) bool { return admitted[p] }}}
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	summary := func(node peer.ID, base time.Time) []byte {
		b, err := json.Marshal(fairshare.Summary{Node: node.String(), At: at, Base: base, HalfLife: fairshare.DefaultHalfLife,
			Users: map[string]fairshare.Entry{"alice": {Usage: 3600, Share: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full, delta := summary(author, time.Time{}), summary(author, at.Add(-time.Hour))
	for _, tc := range []struct {
		name     string
		delta    bool // the topic's
		data     []byte
		admitted bool
		want     pubsub.ValidationResult
	}{
		{"a full summary on usage/1", false, full, true, pubsub.ValidationAccept},
		{"a delta on usage-delta/1", true, delta, true, pubsub.ValidationAccept},
		{"a delta on usage/1", false, delta, true, pubsub.ValidationReject},
		{"a full summary on usage-delta/1", true, full, true, pubsub.ValidationReject},
		{"another node's summary", false, summary(other, time.Time{}), true, pubsub.ValidationReject},
		{"not admitted here", false, full, false, pubsub.ValidationIgnore},
		{"not JSON", false, []byte("{"), true, pubsub.ValidationReject},
		{"too long", false, make([]byte, maxUsageBytes+1), true, pubsub.ValidationReject},
	} {
		admitted[author] = tc.admitted
		m := &pubsub.Message{Message: &pb.Message{From: []byte(author), Data: tc.data}}
		if got := tr.usageValidator(tc.delta)(m); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if u, ok := m.ValidatorData.(market.UsageSummary); ok != (tc.want == pubsub.ValidationAccept) || ok && u.Delta() != tc.delta {
			t.Errorf("%s: validator data %v", tc.name, m.ValidatorData)
		}
	}
	if UsageTopic("n") == UsageDeltaTopic("n") {
		t.Fatal("one topic for both")
	}
}
