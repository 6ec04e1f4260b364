// Package imageshare moves container images between nodes: the image
// protocol (/agora/image/1.0.0) by which a node that lacks a task's
// pinned image has a peer that holds it export it from its engine and
// send it, and the checks that make what arrives the pinned image and
// nothing else — its config hashes to the pinned ID, every layer to the
// digest that config lists, names and tags from the sender are dropped
// — before the node's own engine loads it. Transfers time out on lack
// of progress, not on a fixed clock. Which peers to ask is the
// caller's; the engine is behind the Engine interface.
package imageshare
