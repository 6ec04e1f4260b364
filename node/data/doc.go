// Package data keeps the data that moves between tasks — a task's
// outputs, inputs uploaded by clients — and moves it between nodes: a
// content-addressed store of chunks and manifests (Store, in the node's
// badger store, apart from checkpoints) and the data protocol
// (/agora/data/1.0.0) by which a node fetches a manifest and its chunks
// from their holders, checking every hash, and asks peers to keep a copy
// (an offer, which the peer answers by fetching it from the offerer).
// What is stored when, and which peers hold copies, is the executor's
// and the market's. It must never import package node.
package data
