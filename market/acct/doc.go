// Package acct owns the accounting of task attempts: the records two
// nodes keep of each attempt, what a node accepts of them from a peer,
// how they join into the rows `agora acct` lists, and the figures
// `agora report` computes from them.
//
// Each attempt is attested by the two nodes that saw it, each for what
// it saw: its executor signs a usage record (when it ran, CPU-seconds
// and memory peak from the attempt's cgroup or rusage, GPU-seconds, how
// it ended, on which node and site), its manager a schedule record (when
// the job was submitted, when this attempt became ready to place, was
// awarded and ended, and the job's owner). Neither is the other's to
// sign: a node's memory of what it saw is its own claim, and a receiver
// checks the signature against the node the record names (Accept). The
// rows join the two by attempt (Join); an attempt whose executor was
// lost has a schedule record only, one whose manager was lost a usage
// record only.
//
// It is pure: no clock, no I/O; signing and checking are injected
// (market.Prover). It must never import libp2p, badger or net.
package acct
