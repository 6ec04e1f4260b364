// Package fairshare keeps the decentralized fair share: each node's
// decayed usage per user (what its own executions cost), the latest
// summaries of its peers' usage, and from both the factor
// F = 2^(−U/S) every node computes nearly alike, U a user's share of
// the network's decayed usage and S their share of the shares (Slurm's
// classic formula, docs/scheduling.md "Fair share").
//
// Usage decays with a half-life: a node's summary gives each user's
// usage decayed to the summary's time, so a receiver decays it on to
// its own now, and summaries taken at different times add up. A decay
// applied to everyone alike leaves each user's share of the total, and
// so the factors, unchanged: factors move only when usage is charged
// or a summary arrives.
//
// It is pure: no clock, no I/O. It must never import libp2p, badger or
// net.
package fairshare
