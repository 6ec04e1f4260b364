// Package replication carries copies of job records between nodes: a
// manager pushes each record its market saves to the record's replica
// peers (the market's Replicate effect names them), and a peer stores the
// copies it is sent in its replicas bucket once the market's CheckReplica
// allows them. It is I/O only: which records go where, and what becomes
// of a stored copy (failover), is the market's to decide.
//
// Protocol (/agora/jobrecord/1.0.0, docs/protocol.md): one long-lived
// stream per peer pair; each request is a frame holding up to
// recordsPerFrame records, each with its replica set, in the binary
// job-record encoding; each answer a frame of JSON saying how many it
// stored and why any were refused, in order. A record whose replica set
// leaves the receiver out deletes the receiver's copy.
//
// It must never import package node.
package replication
