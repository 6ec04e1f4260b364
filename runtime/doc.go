// Package runtime runs awarded tasks as local processes on an Agora node.
//
// It owns everything about a task's process once the node has decided to run
// it: starting the command in its own process group, building its
// environment (including the AGORA_* variables and CUDA_VISIBLE_DEVICES for
// the assigned GPUs), creating and using its working directory, capturing
// stdout and stderr, enforcing timeouts, stopping it on cancellation,
// preemption or drain (SIGTERM to the whole group, then SIGKILL after a
// grace period), applying cgroup resource limits (v2, or the v1 memory,
// cpu and pids hierarchies) where it can and saying which (Enforces), and
// reporting how it ended.
//
// The package is deliberately ignorant of the rest of the node: it must not
// import libp2p, badger or the market package. It reports to its caller only
// through the callbacks and interfaces it is given: a LogSink receives the
// output and a done function receives the Result. Errors returned by Start
// are reserved for misuse (an empty or duplicate id); every failure that
// concerns the task itself, including a missing executable, is delivered as
// a Result through done, so the caller has a single path for outcomes.
//
// When a task's main process exits, whatever it left behind in its process
// group (and, when available, its cgroup) is killed, so a task never outlives
// its main process. With Isolation a task runs as a user ID of its own
// (its directories made its own, every process left with that ID killed
// when it ends, setsid ones included) or as a given user, and with
// no_new_privs, set by starting every task from one OS thread that set it.
// With Options.Namespaces a task starts in mount, PID and IPC namespaces
// of its own, through an init process (TaskInit) that gives it a private
// /tmp and /dev/shm and a /proc of its own processes.
//
// The package is Linux only. Its name shadows the standard library's runtime
// package; code that needs both imports the latter as goruntime.
package runtime
