package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
)

// TestKeyProver: a proof signed with a node's identity key checks by its
// node ID, and by no other node's; a changed message or signature, or a
// node ID that is no peer ID, fails.
func TestKeyProver(t *testing.T) {
	ids := make([]market.NodeID, 2)
	provers := make([]keyProver, 2)
	for i := range ids {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], provers[i] = market.NodeID(id.String()), keyProver{k}
	}
	msg := market.ProofBytes(market.TaskKey{Job: "j", Task: "t"}, 3, true, ids[1])
	sig := provers[0].Sign(msg)
	if !provers[1].Verify(ids[0], msg, sig) {
		t.Fatal("a node's proof does not check by its ID")
	}
	other := market.ProofBytes(market.TaskKey{Job: "j", Task: "t"}, 3, false, ids[1])
	bad := append([]byte(nil), sig...)
	bad[0] ^= 1
	for name, ok := range map[string]bool{
		"another node's ID": provers[1].Verify(ids[1], msg, sig),
		"another message":   provers[1].Verify(ids[0], other, sig),
		"a changed sig":     provers[1].Verify(ids[0], msg, bad),
		"no peer ID":        provers[1].Verify("n0", msg, sig),
	} {
		if ok {
			t.Fatalf("%s: verified", name)
		}
	}
}
