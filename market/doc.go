// Package market is Agora's pure scheduling core: the contract-net auction
// in both roles (manager and contractor), bid scoring (with GPU
// fragmentation under the task mix each node learns, frag.go), runtime and
// load prediction, priorities, preemption and retries.
//
// It is a deterministic state machine in the style of etcd's raft: the
// caller feeds it events — Submit, Step (an inbound message), Advert,
// PeerGone, TaskExited, Tick — each with the current time, and then drains
// Ready for the effects to carry out: messages to send, CFPs to broadcast,
// tasks to start or stop, records to persist. Market has no goroutines,
// sockets, badger, os/exec or time.Now; randomness comes from an injected
// seeded source. The node drives it with real time and libp2p, the
// simulator with virtual time, and both run exactly this code.
//
// Caller duties, in order, after every event:
//
//  1. Call Ready and carry out the effects in the order given.
//  2. Persist SaveJob records before sending messages that depend on them
//     (Ready already orders SaveJob first).
//  3. Deliver Send effects to the named node; deliver Broadcast CFPs to
//     every peer; a message to an unreachable node may simply be dropped —
//     the core times out and recovers.
//  4. Start and stop tasks as told, and report every exit with TaskExited,
//     exactly once per StartTask.
//  5. Call Tick at least every Config.TickEvery.
//  6. A caller whose own process can stand still (a node: stopped,
//     starved of CPU, its loop busy) measures the gap between its ticks
//     and, when one is well past the period, calls Paused with its
//     length before anything else: the silence it could not hear is not
//     its peers'. A simulator whose nodes never stall does not.
//
// The package must never import libp2p, badger, net, os/exec or the
// runtime package.
package market
