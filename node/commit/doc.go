// Package commit is a node's committer: it writes the job records of the
// market's turns to the store, several turns per commit, and carries out
// each turn's effects (messages, task starts) only once its records are
// stored — the market's write-ahead rule. A commit the store refuses (a
// full disk, an I/O error) is retried until it succeeds, and its effects,
// and every later turn's, wait: the node reports itself degraded
// meanwhile, and nothing leaves it that a record not stored would have
// announced.
package commit
