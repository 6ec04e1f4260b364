// Package imageshare brings a task's pinned container image to the node
// that runs it: the image protocol (/agora/image/1.0.0), by which a
// peer whose engine holds the image exports and sends it, and a pull
// over the registry API when no peer can. What arrives is checked to be
// the pinned image and nothing else — its config hashes to the pinned
// ID, every layer to the digest that config lists; names and tags from
// the sender are dropped — before the node's own engine loads it.
// Transfers time out on lack of progress, not on a fixed clock. Which
// peers to ask is the caller's; the engine is behind the Engine
// interface.
package imageshare
