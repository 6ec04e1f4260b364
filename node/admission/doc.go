// Package admission keeps a node with --trust to its network: it admits
// a peer only once the peer has shown a valid, unrevoked node
// certificate of the node's authority, and until then no protocol of the
// node talks to it. Right after a connection's secure channel is up,
// each side sends the other its certificate chain and the revocations
// it knows (/agora/admit/1.0.0); a peer that fails is disconnected and
// refused for a while. Every other protocol — the market's streams,
// queries, job-record copies, checkpoints, the DHT, GossipSub — runs on
// Host, which holds a stream from or to a peer until it is admitted and
// resets it if it is not. A peer is also admitted from the certificate
// its adverts carry (AdmitAdvert), so that a node trusts the authors of
// gossip it was never connected to. Revocations, signed by the authority
// or a site delegate, spread on their own topic and are kept by the
// node; one that reaches an admitted peer disconnects it at once.
//
// It also holds what decides who a node is and who may connect to it at
// all: the node's identity key in its data dir (LoadIdentity; its peer ID
// is what a node certificate names) and the connection gater (Gater),
// which refuses blocked peers before any protocol runs.
//
// The checks themselves are market/auth's; this package carries bytes
// and keeps the peers' state. It must never import package node.
package admission
