// Package checkpoints keeps task checkpoints and moves them between
// nodes: a content-addressed store of chunks and the newest manifest of
// each task replica (Store, in the node's badger store), and the
// checkpoint protocol (/agora/checkpoint/1.0.0) by which an executor
// pushes a snapshot to its replica peers and a resuming executor finds
// and fetches it (Service). What is snapshotted when, and which peers
// hold the copies, is the executor's (package node/executor) and the
// market's (market.Closest). It must never import package node.
package checkpoints
