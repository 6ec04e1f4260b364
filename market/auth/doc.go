// Package auth is Agora's trust model, as pure code: an offline cluster
// authority (an Ed25519 key pair), the certificates it signs — node
// certificates (a peer ID, its site, roles, expiry), user certificates
// (a user's key, name, role, quotas, expiry) and delegate certificates
// (a site admin's key, allowed to admit nodes for that site) — chains of
// them, revocations, signed job submissions (tickets) and signed
// requests (tokens), and the rules that decide who may do what (Book,
// Allow, quotas).
//
// Every check is a function of its inputs and the time it is given:
// no clock, no I/O, no randomness but what the caller passes in. The
// market runs these checks on the messages it acts on, and the node on
// connections and API requests; the simulator and the scripted tests run
// them as a real node does.
//
// Encodings are binary, canonical and versioned (docs/protocol.md), each
// signature over a domain-separated digest, so that no signed object can
// stand for another kind. Files hold them in PEM blocks.
package auth
