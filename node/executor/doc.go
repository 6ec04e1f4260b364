// Package executor runs the task attempts a node's market starts: each
// in its own work directory, as a process of the runtime (or another
// TaskRunner), its output kept in the node's store as a log stream and its
// life in an execution record; a task with a checkpoint interval is
// snapshotted as it runs and once more when it stops, the snapshots
// pushed to its replica peers, and a later attempt restores the newest
// before it starts. Exits go back to the market through Options.Exited.
// Processes left behind by a previous run of the node are killed at
// start. It must never import package node.
package executor
