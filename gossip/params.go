package gossip

import pubsub "github.com/libp2p/go-libp2p-pubsub"

// GossipSub mesh degrees every node runs with (the library's are D = 6,
// Dlo = 5, Dhi = 12, Dout = 2). See GossipSubParams.
const (
	MeshD    = 4 // target mesh degree
	MeshDlo  = 3 // fewer mesh peers than this: graft more
	MeshDhi  = 6 // more than this: prune down to MeshD
	MeshDout = 1 // outbound mesh peers kept when pruning
)

// GossipSubParams are the GossipSub router parameters every node runs:
// the library's defaults with a smaller mesh (MeshD, MeshDlo, MeshDhi,
// MeshDout).
//
// Every node forwards each message it receives to all of its mesh peers
// but the sender, so a node receives about one copy per mesh peer:
// duplicates grow with the mesh degree, and in a cluster not much larger
// than the mesh nearly every peer is a mesh peer (the library's Dhi of 12
// lets the mesh grow to the whole of a small cluster). Adverts are small
// (about 260 bytes signed), periodic (each replaces the last, so a lost
// one is repaired by the next within the advert interval) and come from
// members of the cluster only, which is what the library's larger mesh
// guards against (eclipse and spam by outsiders). A mesh of 3 to 6 peers
// keeps the overlay connected after any two failures around a node,
// reaches 10,000 nodes in about 9 hops (milliseconds on a LAN, far inside
// the 2 s advert interval), and halves advert traffic and duplicates
// against the default in an 8-node cluster (BenchmarkNetAdverts).
//
// IDONTWANT is left at the library's threshold (1 KiB, so it does not
// apply to adverts or CFPs): lowered below the advert size, it added ~20 %
// to pubsub bytes without removing duplicates, because the publisher sends
// an advert to all its mesh peers at once and each forwards it before its
// neighbours' IDONTWANT for the same message can arrive.
func GossipSubParams() pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.D, p.Dlo, p.Dhi, p.Dout = MeshD, MeshDlo, MeshDhi, MeshDout
	p.Dscore = min(p.Dscore, MeshDhi)
	return p
}
