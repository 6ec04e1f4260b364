package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// stopState records why a task is being stopped; the first cause wins.
type stopState struct {
	timedOut  bool
	cancelled bool
	reason    string
	limit     string // a limit the task broke (killFor): a failure with this reason
}

// task is one running attempt.
type task struct {
	id   string
	spec Spec
	done func(Result)
	out  *output

	mu       sync.Mutex
	cmd      *exec.Cmd // nil until started, and forever if starting failed
	uid      uint32    // the task's own user ID (Isolation.IDs), when owned
	owned    bool      // uid is the task's own, from the Runner's pool
	adopted  bool      // an orphan of the node's previous run (Adopt): no cmd, not a child
	pid      int
	started  time.Time
	exited   bool // the main process has exited; the group must not be signalled
	stop     stopState
	termSent bool
	timeout  *time.Timer
	killer   *time.Timer
	cg       *taskCgroup
	// contained says the last SIGKILL went to a cgroup that held the
	// whole task (taskCgroup.kill): nothing of it runs any more.
	contained bool
	rt        *ContainerRuntime // the engine of a container task
	envFile   string            // a container task's environment (writeEnvFile), removed as it ends
	stdout    *os.File          // read ends of the output pipes
	stderr    *os.File
	quit      chan struct{} // closed when the main process exited: the watchers stop
}

// start prepares and starts the process. The caller holds t.mu.
func (t *task) start(r *Runner) error {
	if err := t.spec.validate(); err != nil {
		return err
	}
	dir, err := filepath.Abs(t.spec.WorkDir)
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create work dir: %w", err)
	}
	cred, err := t.identity(r, dir)
	if err != nil {
		return err
	}
	env := buildEnv(r.baseEnv(), t.spec, dir)
	var path string
	argv := t.spec.Command
	ct := t.spec.Container
	if ct != nil {
		// The engine runs as the node; the task's user is the container's.
		rt := r.opts.Container
		if rt == nil {
			return fmt.Errorf("image %s: this node has no container runtime", ct.Image)
		}
		if err := rt.checkPinned(ct); err != nil {
			return err
		}
		var user string
		if cred != nil {
			user = fmt.Sprintf("%d:%d", cred.Uid, cred.Gid)
		}
		if t.envFile, err = writeEnvFile(env); err != nil {
			return err
		}
		argv = rt.containerArgs(t.id, t.spec, dir, t.envFile, user, r.opts.PidsMax)
		path, cred, env = rt.Path, nil, engineEnv()
		rt.removeContainer(t.id) // left by a node that died before cleaning up
	} else if path, err = lookPath(t.spec.Command[0], env); err != nil {
		return err
	}
	if t.spec.ExitFile != "" {
		argv = append([]string{"/bin/sh", "-c", exitWrapper, "agora-task", t.spec.ExitFile, path}, argv[1:]...)
		path = "/bin/sh"
	}
	var clone uintptr
	if r.opts.Namespaces && ct == nil { // a container has namespaces of its own
		keep := []string{dir}
		if c := t.spec.CheckpointDir; c != "" {
			if c, err = filepath.Abs(c); err != nil {
				return err
			}
			keep = append(keep, c)
		}
		argv = initArgs{cred: cred, keep: keep, path: path, argv: argv}.encode()
		path, cred, clone = r.opts.InitPath, nil, nsCloneFlags
		if path == "" {
			return errors.New("task namespaces: cannot find this program's path")
		}
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("stderr pipe: %w", err)
	}

	var cg *taskCgroup
	if ct == nil { // the engine puts a container in a cgroup of its own, with the same limits
		cg = r.cgroups.create(t.id, t.spec)
	}
	newCmd := func(cgfd int) *exec.Cmd {
		attr := &syscall.SysProcAttr{Setpgid: true, Credential: cred, Cloneflags: clone}
		if cgfd >= 0 {
			attr.UseCgroupFD = true
			attr.CgroupFD = cgfd
		}
		return &exec.Cmd{
			Path:        path,
			Args:        argv,
			Env:         env,
			Dir:         dir,
			Stdout:      outW,
			Stderr:      errW,
			SysProcAttr: attr,
		}
	}
	cmd := newCmd(cg.fd())
	err = r.spawn(cmd, cg)
	if err != nil && cg.fd() >= 0 {
		// The kernel may not support starting straight into a cgroup;
		// resource limits are best effort, so retry without and move the
		// process afterwards.
		log.Debugw("starting in cgroup failed, retrying without", "id", t.id, "err", err)
		cmd = newCmd(-1)
		if err = r.spawn(cmd, cg); err == nil {
			cg.addProcess(cmd.Process.Pid) // not whole: it may have forked first
		}
	} else if err == nil && cg.fd() >= 0 {
		cg.whole = true
	}
	cg.closeFD()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		cg.remove()
		t.releaseID(r)
		return err
	}

	t.cmd = cmd
	t.pid = cmd.Process.Pid
	t.started = time.Now()
	t.cg = cg
	if ct != nil {
		t.rt = r.opts.Container
	}
	t.stdout, t.stderr = outR, errR
	t.out.pump(StreamStdout, outR)
	t.out.pump(StreamStderr, errR)
	if t.spec.Timeout > 0 {
		t.timeout = time.AfterFunc(t.spec.Timeout, func() {
			t.terminate(stopState{timedOut: true})
		})
	}
	if t.spec.Disk > 0 {
		go t.watchDisk(dir)
	}
	log.Debugw("task started", "id", t.id, "pid", t.pid, "cmd", t.spec.Command, "dir", dir)
	return nil
}

// supervise waits for the main process to exit, cleans up after it and
// returns its result. It runs on its own goroutine after a successful start.
func (t *task) supervise(r *Runner) Result {
	drainTimeout := r.opts.DrainTimeout
	waitErr := waitExited(t.pid)
	finished := time.Now()

	// The main process is now a zombie, which keeps its process group id
	// reserved: kill whatever it left behind before reaping it. If waiting
	// failed, the process may already be gone and its id reused, so the
	// group is left alone.
	t.mu.Lock()
	if waitErr == nil {
		t.signalLocked(syscall.SIGKILL)
	} else {
		log.Warnw("waiting for task", "id", t.id, "err", waitErr)
	}
	st := t.exitedLocked()
	t.mu.Unlock()

	waitErr = t.cmd.Wait()

	// Everything in the group is dead, so the pipes close promptly unless a
	// process that left the group (setsid) still holds them.
	drained := make(chan struct{})
	go func() {
		t.out.wg.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		log.Warnw("task output still open after exit, abandoning it", "id", t.id)
		t.stdout.SetReadDeadline(time.Now())
		t.stderr.SetReadDeadline(time.Now())
		<-drained
	}
	t.stdout.Close()
	t.stderr.Close()
	oom := t.cg.oomKilled()
	usage, measured := t.cg.usage()
	t.cg.remove()
	maybeOOM := false
	if t.spec.Container != nil && r.opts.Container != nil {
		stopped := st.limit != "" || st.cancelled || st.timedOut
		oom = !stopped && t.spec.Memory > 0 && r.opts.Container.oomKilled(t.id)
		// Some engines (podman 4.3 on cgroup v1) never report the kill:
		// a SIGKILL inside a memory-limited container we did not stop
		// is then named for the limit, saying the engine did not tell.
		maybeOOM = !stopped && !oom && t.spec.Memory > 0 && t.cmd.ProcessState != nil && t.cmd.ProcessState.ExitCode() == 137
		r.opts.Container.removeContainer(t.id)
	}
	t.removeEnvFile()
	t.mu.Lock()
	t.releaseID(r)
	t.mu.Unlock()

	res := exitResult(t.cmd.ProcessState, waitErr, st, t.spec.Timeout)
	if oom && !res.TimedOut && !res.Cancelled {
		res.Reason = fmt.Sprintf("killed: out of memory, over its memory limit of %d MiB (%s)", t.spec.Memory>>20, res.Reason)
	}
	if maybeOOM {
		res.Reason = fmt.Sprintf("killed by SIGKILL inside its container, which has a memory limit of %d MiB: most likely out of memory, though the container engine did not say (%s)", t.spec.Memory>>20, res.Reason)
	}
	res.Started = t.started
	res.Finished = finished
	res.Pid = t.pid
	switch {
	case t.spec.Container != nil:
		// The engine runs the container's processes in cgroups of its
		// own: the client's use is not the task's.
	case measured:
		res.Usage = usage
	default:
		res.Usage, _ = rusageOf(t.cmd.ProcessState)
	}
	return res
}

// exitedLocked marks the main process exited (nothing is signalled from
// now on), stops the timers and returns why the task was stopped, if it
// was. The caller holds t.mu.
func (t *task) exitedLocked() stopState {
	if !t.exited && t.quit != nil {
		close(t.quit)
	}
	t.exited = true
	if t.timeout != nil {
		t.timeout.Stop()
	}
	if t.killer != nil {
		t.killer.Stop()
	}
	return t.stop
}

// terminate asks the task to stop: SIGTERM to its group now, SIGKILL after
// the grace period. Only the first call has an effect.
func (t *task) terminate(why stopState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if (t.cmd == nil && !t.adopted) || t.exited || t.termSent {
		return
	}
	t.termSent = true
	if !t.stop.timedOut && !t.stop.cancelled {
		t.stop = why
	}
	log.Debugw("stopping task", "id", t.id, "timedOut", why.timedOut, "reason", why.reason)
	t.signalLocked(syscall.SIGTERM)
	t.killer = time.AfterFunc(t.spec.grace(), func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.exited {
			log.Debugw("grace period over, killing task", "id", t.id)
			t.signalLocked(syscall.SIGKILL)
		}
	})
}

// kill sends SIGKILL to the task's group at once.
func (t *task) kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if (t.cmd == nil && !t.adopted) || t.exited {
		return
	}
	if !t.stop.timedOut && !t.stop.cancelled {
		t.stop = stopState{cancelled: true, reason: "killed"}
	}
	t.signalLocked(syscall.SIGKILL)
}

// signalLocked signals the task's process group (and, for SIGKILL, its
// cgroup). The caller holds t.mu and has checked that the main process has
// not been reaped.
func (t *task) signalLocked(sig syscall.Signal) {
	if (t.cmd == nil && !t.adopted) || t.exited {
		return
	}
	if err := signalGroup(t.pid, sig); err != nil {
		log.Warnw("signalling task", "id", t.id, "err", err)
	}
	if sig == syscall.SIGKILL {
		if t.spec.Container != nil && t.rt != nil {
			// Killing the engine's client leaves the container running.
			go t.rt.removeContainer(t.id)
		}
		t.contained = t.cg.kill()
		if t.owned && !t.contained {
			// What left the group (setsid) still has the task's ID.
			killUser(t.uid)
		}
	}
}

// identity prepares the user the task runs as (Isolation) and returns its
// credential, nil for the node's own: the work and checkpoint
// directories become the user's.
func (t *task) identity(r *Runner, dir string) (*syscall.Credential, error) {
	iso := r.opts.Isolation
	var id Identity
	switch {
	case t.spec.User != nil:
		id = *t.spec.User
	case r.ids != nil:
		uid, err := r.ids.take()
		if err != nil {
			return nil, err
		}
		t.uid, t.owned = uid, true
		id = Identity{UID: uid, GID: uid}
	case iso.User != nil:
		id = *iso.User
	default:
		return nil, nil
	}
	for _, d := range []string{dir, t.spec.CheckpointDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.releaseID(r)
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
		if err := ownTree(d, id.UID); err != nil {
			t.releaseID(r)
			return nil, fmt.Errorf("give %s to the task's user: %w", d, err)
		}
	}
	groups := id.Groups
	if groups == nil {
		groups = []uint32{}
	}
	return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: groups}, nil
}

// releaseID gives the task's own user ID back, once nothing runs with it:
// after a kill of its cgroup that held the whole task, or else a search by
// user ID.
func (t *task) releaseID(r *Runner) {
	if t.owned {
		if !t.contained {
			killUser(t.uid)
		}
		r.ids.give(t.uid)
		t.owned = false
	}
}

// exitWrapper runs "$@" and writes its exit status to $1 (through a
// temporary file, so that a reader sees all of it or nothing); it exits
// as the command did. Run as the task's main process, it goes on when the
// node dies, and so does the record.
const exitWrapper = `f=$1; shift; "$@"; s=$?; echo $s > "$f.tmp" && mv -f "$f.tmp" "$f"; exit $s`

// removeEnvFile deletes a container task's environment file.
func (t *task) removeEnvFile() {
	if t.envFile != "" {
		_ = os.Remove(t.envFile)
		t.envFile = ""
	}
}
