// Package testnet starts multi-node Agora networks inside one test process,
// on loopback only: real libp2p hosts listening on 127.0.0.1 with per-node
// data dirs and resource files, and the faults tests need (kill without a
// goodbye, graceful stop, restart with the same data dir, partitions).
//
// Every later issue's multi-node tests go through it. It must never listen
// on or dial anything outside 127.0.0.0/8.
package testnet
