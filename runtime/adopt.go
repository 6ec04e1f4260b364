package runtime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Orphan is a task attempt's main process that outlived the node that
// started it (kill -9, a crash): the process Spec.ExitFile's wrapper runs
// as, still running when the node came back.
type Orphan struct {
	PID int
	// Started is when the attempt started (its execution record's).
	Started time.Time
	// ExitFile is where the wrapper writes the command's exit status.
	ExitFile string
	// Timeout is what is left of the attempt's timeout (0: none), Grace
	// its stop grace.
	Timeout, Grace time.Duration
	// Container: the attempt runs an image, and the process is the
	// engine's client; its container, named after the attempt, is
	// removed when it is killed or ends.
	Container bool
}

// adoptPoll is how often an adopted process is looked at: it is not this
// process's child, so its exit cannot be waited for.
const adoptPoll = 50 * time.Millisecond

// Adopt takes over an orphan under id, as Start would have started it:
// Stop and Kill reach its process group (and its own user ID, when it
// runs as one of this Runner's), its timeout runs on, and done is called
// once, after it exits, with the exit status its wrapper left. Its
// output went to the node that died and is not captured; a command that
// writes to its standard output or error afterwards gets SIGPIPE.
//
// Adopt returns an error when id is in use or the process is not one to
// adopt (gone, or not the orphan's: its process group is not its own).
func (r *Runner) Adopt(id string, o Orphan, done func(Result)) error {
	if id == "" || o.PID <= 1 {
		return errors.New("runtime: adopt: empty id or bad pid")
	}
	if pgid, err := syscall.Getpgid(o.PID); err != nil || pgid != o.PID {
		return fmt.Errorf("runtime: adopt %s: process %d is not the leader of its own group (%v)", id, o.PID, err)
	}
	start, err := procStart(o.PID)
	if err != nil {
		return fmt.Errorf("runtime: adopt %s: %w", id, err)
	}
	t := &task{id: id, spec: Spec{ExitFile: o.ExitFile, Timeout: o.Timeout, Grace: o.Grace}, done: done, out: newOutput(nil),
		pid: o.PID, started: o.Started, adopted: true}
	if o.Container && r.opts.Container != nil {
		t.spec.Container, t.rt = &Container{}, r.opts.Container
	}
	if uid, ok := procUID(o.PID); ok && r.ids != nil && r.ids.mark(uid) {
		t.uid, t.owned = uid, true
	}
	if err := r.track(t); err != nil {
		if t.owned {
			r.ids.give(t.uid)
		}
		return err
	}
	if o.Timeout > 0 {
		left := time.Until(o.Started.Add(o.Timeout))
		t.timeout = time.AfterFunc(max(left, 0), func() { t.terminate(stopState{timedOut: true}) })
	}
	log.Infow("task re-attached after a restart", "id", id, "pid", o.PID)
	go func() { r.finish(t, t.superviseAdopted(r, start)) }()
	return nil
}

// superviseAdopted waits for an adopted process to end, by looking at it
// (start: its start time, against a recycled PID), cleans up after it
// and reads its exit status from its wrapper's file.
func (t *task) superviseAdopted(r *Runner, start uint64) Result {
	for {
		if s, err := procStart(t.pid); err != nil || s != start || procZombie(t.pid) {
			break
		}
		time.Sleep(adoptPoll)
	}
	finished := time.Now()
	t.mu.Lock()
	st := t.exitedLocked()
	t.mu.Unlock()
	// What the attempt left in its group, and under its own ID.
	_ = syscall.Kill(-t.pid, syscall.SIGKILL)
	if t.rt != nil {
		t.rt.removeContainer(t.id)
	}
	t.mu.Lock()
	t.releaseID(r)
	t.mu.Unlock()

	res := Result{ExitCode: -1, Started: t.started, Finished: finished, Pid: t.pid}
	b, err := os.ReadFile(t.spec.ExitFile)
	code, cerr := strconv.Atoi(strings.TrimSpace(string(b)))
	switch {
	case err == nil && cerr == nil && code >= 0 && code <= 255:
		res.ExitCode, res.Reason = code, fmt.Sprintf("exit status %d", code)
	default:
		res.Reason = "ended without an exit status (re-attached after a restart; killed)"
	}
	switch {
	case st.timedOut:
		res.TimedOut, res.ExitCode = true, -1
		res.Reason = fmt.Sprintf("timeout after %v", t.spec.Timeout)
	case st.cancelled:
		res.Cancelled, res.ExitCode = true, -1
		res.Reason = "cancelled"
		if st.reason != "" {
			res.Reason += ": " + st.reason
		}
	}
	return res
}

// procStart is a process's start time in clock ticks since boot
// (/proc/PID/stat field 22): with the PID, it names one process.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 is the 20th after the name
}

// procZombie reports whether a process has exited and awaits its reaping.
func procZombie(pid int) bool { return zombie(pid) }

// procUID is a process's real user ID.
func procUID(pid int) (uint32, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	_, rest, ok := strings.Cut(string(b), "\nUid:")
	if !ok {
		return 0, false
	}
	line, _, _ := strings.Cut(rest, "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(f[0], 10, 32)
	return uint32(n), err == nil
}
