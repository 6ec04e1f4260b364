// Package accounting keeps the accounting records (market/acct) a node
// signed or accepted, and carries them between nodes: each node pushes
// the records it signs to a few peers over /agora/acct/1.0.0, and keeps
// what peers push to it once market/acct.Accept allows it. Records are
// kept by end time for the accounting retention, independent of job
// retention, and read in pages by end time for queries.
//
// Protocol (/agora/acct/1.0.0, docs/protocol.md): one stream per push;
// the pusher writes one frame holding {"records": [...]} (at most
// MaxPush records), the receiver answers one frame {"stored": N,
// "refused": ["why", ...]}.
//
// It is I/O only: what a node accepts is market/acct's to decide. It must
// never import package node.
package accounting
