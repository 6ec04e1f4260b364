// Package cluster drives the markets of a set of simulated nodes in
// virtual time, carrying out their effects the way a real node does on a
// real network: messages arrive after a latency (or are lost), started
// tasks run for a given time and exit, job records are persisted, copies
// of them are stored on the replica peers, each node's view of its peers
// is refreshed by adverts. It plays the faults a node meets too: a crash
// (its running tasks and the messages on their way to it lost, what it
// persisted kept), a restart, a graceful leave, its peers noticing it is
// gone.
//
// The simulator (testnet/sim) and the market's scripted protocol tests
// (market/testdata, run by package market's TestScripts) both drive this
// one driver, so both exercise the code a node ships: every decision is
// the market's, and the driver only does what package node does with
// bytes, processes and the store. It is deterministic: the same calls in
// the same order give the same result, and it reads no clock and draws no
// random number of its own.
//
// It must never import libp2p, badger, net or os/exec.
package cluster
