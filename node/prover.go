package node

import (
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
)

// keyProver signs the market's task proofs with the node's identity key
// and checks others' with the public key their node ID names
// (market/proofs.go).
type keyProver struct{ key crypto.PrivKey }

func (p keyProver) Sign(msg []byte) []byte {
	sig, err := p.key.Sign(msg)
	if err != nil {
		return nil // an unsigned report: the manager counts nothing for it
	}
	return sig
}

// Verify checks sig by node's key: a peer ID that embeds its public key
// (Ed25519, the identity every node makes) names it; any other is not
// checked and fails.
func (keyProver) Verify(node market.NodeID, msg, sig []byte) bool {
	id, err := peer.Decode(string(node))
	if err != nil {
		return false
	}
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return false
	}
	ok, err := pub.Verify(msg, sig)
	return err == nil && ok
}
