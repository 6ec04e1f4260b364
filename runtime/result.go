package runtime

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// Result describes how one run of a task ended.
type Result struct {
	// ExitCode is the process's exit status, or -1 when it was killed by a
	// signal or never started.
	ExitCode int
	// Signal names the signal that killed the process (for example
	// "killed" or "terminated"); it is empty when the process exited.
	Signal string
	// Reason is a human-readable summary, such as "exit status 3",
	// "timeout after 2s", "cancelled: preempted", "killed by signal
	// terminated" or "start: exec: \"x\": executable file not found in
	// $PATH".
	Reason string
	// TimedOut reports that the task was stopped because its timeout expired.
	TimedOut bool
	// Cancelled reports that the task was stopped through Stop, StopAll or
	// Kill.
	Cancelled bool
	// Started is when the process started; it is zero when it never did.
	Started time.Time
	// Finished is when the process's exit was observed, or when starting it
	// failed.
	Finished time.Time
	// Pid is the process id of the task's main process, zero when it never
	// started.
	Pid int
	// Usage is what the task used, as far as it was measured.
	Usage Usage
}

// Usage is a task's measured use of the node: CPU time and memory peak,
// from its own cgroup where it had one, else from its main process's
// rusage (which counts the descendants it waited for).
type Usage struct {
	CPU     time.Duration
	MemPeak int64
	// Source is "cgroup", "rusage" or "" (not measured: a container,
	// whose processes its engine runs outside the task's cgroup).
	Source string
}

// Usage sources.
const (
	UsageCgroup = "cgroup"
	UsageRusage = "rusage"
	UsageNone   = ""
)

// rusageOf is the usage a process's rusage reports, if it has one.
func rusageOf(ps *os.ProcessState) (Usage, bool) {
	if ps == nil {
		return Usage{}, false
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return Usage{}, false
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return Usage{CPU: cpu, MemPeak: ru.Maxrss << 10, Source: UsageRusage}, true
}

// startFailure builds the result for a task whose process could not start.
func startFailure(err error) Result {
	return Result{
		ExitCode: -1,
		Reason:   "start: " + err.Error(),
		Finished: time.Now(),
	}
}

// exitResult builds the result for a process that ran; ps may be nil when
// waiting for it failed, in which case waitErr says why.
func exitResult(ps *os.ProcessState, waitErr error, st stopState, timeout time.Duration) Result {
	res := Result{ExitCode: -1}
	switch {
	case ps == nil:
		res.Reason = fmt.Sprintf("wait: %v", waitErr)
	default:
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
			res.Reason = "killed by signal " + res.Signal
		} else {
			res.ExitCode = ps.ExitCode()
			res.Reason = fmt.Sprintf("exit status %d", res.ExitCode)
		}
	}
	switch {
	case st.limit != "":
		res.Reason = st.limit
	case st.timedOut:
		res.TimedOut = true
		res.Reason = fmt.Sprintf("timeout after %s", timeout)
	case st.cancelled:
		res.Cancelled = true
		res.Reason = "cancelled"
		if st.reason != "" {
			res.Reason += ": " + st.reason
		}
	}
	return res
}
