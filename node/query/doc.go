// Package query carries the questions peers ask each other about jobs
// (/agora/query/1.0.0): a job's record, a task attempt's logs, a cancel.
// One wire.Query and one wire.QueryReply per stream. It is I/O only: the
// answers are its caller's (package node). It must never import package
// node.
package query
