package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// DefaultDrainTimeout is how long a Runner waits, after a task's process
// group has been killed, for its output pipes to close before abandoning
// them; see Options.DrainTimeout.
const DefaultDrainTimeout = 2 * time.Second

// Options configures a Runner. The zero value is ready to use.
type Options struct {
	// BaseEnv is the environment tasks inherit before Spec.Env and Agora's
	// variables are applied. Nil means the node's own environment
	// (os.Environ) at the time of each Start.
	BaseEnv []string
	// DrainTimeout bounds the wait for a task's output pipes to close after
	// its process group is gone; a process that escaped the group (for
	// example with setsid) may hold them open. Zero means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// DisableCgroups turns off the best-effort cgroup v2 resource limits.
	DisableCgroups bool
	// CgroupParent, when set, is the cgroup v2 directory under which task
	// cgroups are created, instead of the node's own cgroup as found in
	// /proc/self/cgroup and /proc/self/mountinfo.
	CgroupParent string
	// Isolation confines tasks to identities of their own (see
	// CheckIsolation for what it needs).
	Isolation Isolation
	// PidsMax bounds the processes of every task, where the pids
	// controller is available; 0: no bound.
	PidsMax int
	// Namespaces starts every task in mount, PID and IPC namespaces of
	// its own, with a private /tmp and /dev/shm (see TaskInit; check
	// with CheckNamespaces). InitPath is the program whose main calls
	// TaskInit; "": this one.
	Namespaces bool
	InitPath   string
	// Container is the engine that runs tasks whose Spec has a
	// Container; nil: such tasks fail to start, saying so.
	Container *ContainerRuntime
	// IDClaim, when set, is the host-wide claim on Isolation.IDs
	// (ClaimTaskIDs); the Runner gives it back at Close.
	IDClaim *IDClaim
}

// Runner starts task processes and tracks them until they end. It is safe
// for concurrent use.
type Runner struct {
	opts    Options
	cgroups *cgroupManager // nil when cgroups are unavailable
	noCgErr error          // why, then
	ids     *idPool        // with Isolation.IDs
	spawner *spawner       // with Isolation.NoNewPrivs

	mu     sync.Mutex
	tasks  map[string]*task
	active int           // tasks whose done callback has not returned yet
	idle   chan struct{} // closed when active drops to zero
}

// NewRunner returns a Runner configured by opts. It probes cgroup v2 support
// once; cgroups being unavailable is never an error.
func NewRunner(opts Options) *Runner {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.Namespaces && opts.InitPath == "" {
		opts.InitPath, _ = os.Executable() // "": each start fails, saying so
	}
	r := &Runner{
		opts:  opts,
		tasks: make(map[string]*task),
	}
	if !opts.DisableCgroups {
		r.cgroups, r.noCgErr = detectCgroups(opts.CgroupParent)
		if r.cgroups != nil {
			r.cgroups.pidsMax = opts.PidsMax
		}
	}
	if opts.Isolation.IDs.Count > 0 {
		r.ids = &idPool{r: opts.Isolation.IDs, inUse: map[uint32]bool{}}
	}
	if opts.Isolation.NoNewPrivs || (r.cgroups != nil && r.cgroups.v1 != nil) {
		r.spawner = &spawner{noNewPrivs: opts.Isolation.NoNewPrivs}
	}
	return r
}

// spawn starts cmd, from the spawner's thread when there is one (in cg's
// v1 cgroups for the fork).
func (r *Runner) spawn(cmd *exec.Cmd, cg *taskCgroup) error {
	if r.spawner == nil {
		return cmd.Start()
	}
	var err error
	if serr := r.spawner.run(func() {
		cg.enterThread()
		err = cmd.Start()
		cg.leaveThread()
	}); serr != nil {
		return serr
	}
	return err
}

// Close gives back what the Runner holds for the host (its claim on task
// IDs). Tasks still running are left alone: a block whose IDs have live
// processes is not taken by another node.
func (r *Runner) Close() error { return r.opts.IDClaim.Close() }

// CgroupProblem is why this Runner makes no task cgroups, nil when it
// does or when Options.DisableCgroups.
func (r *Runner) CgroupProblem() error { return r.noCgErr }

// ContainerRuntime is the engine image tasks run through, nil when none.
func (r *Runner) ContainerRuntime() *ContainerRuntime { return r.opts.Container }

// Enforces is the set of task limits this Runner enforces.
func (r *Runner) Enforces() resource.Limits {
	m := r.cgroups
	if m == nil {
		return 0
	}
	var l resource.Limits
	if m.cpu {
		l |= resource.LimitCPU
	}
	if m.memory {
		l |= resource.LimitMemory
	}
	if m.pids && m.pidsMax > 0 {
		l |= resource.LimitPids
	}
	return l
}

// Limits says which of a task's limits this Runner enforces, for the
// node to say at start.
func (r *Runner) Limits() string {
	m := r.cgroups
	if m == nil {
		return "none: no writable cgroup (v2, or v1 memory and cpu hierarchies); CPU and memory are only accounted by the scheduler"
	}
	var on []string
	for _, x := range []struct {
		ok   bool
		what string
	}{{m.cpu, "cpu"}, {m.memory, "memory"}, {m.pids && m.pidsMax > 0, fmt.Sprintf("pids (%d)", m.pidsMax)}} {
		if x.ok {
			on = append(on, x.what)
		}
	}
	v := "cgroup v2 under " + m.parent
	if m.v1 != nil {
		v = "cgroup v1"
	}
	return strings.Join(on, ", ") + " (" + v + ")"
}

func (r *Runner) baseEnv() []string {
	if r.opts.BaseEnv != nil {
		return r.opts.BaseEnv
	}
	return os.Environ()
}

// Start runs spec as the attempt identified by id, which must be unique
// among the attempts the Runner is tracking. Output goes to sink (nil
// discards it) and done, which may be nil, is called exactly once, from
// another goroutine, after the process has exited and both output streams
// are drained. done must not call Wait, which waits for done to return.
//
// Start returns an error only when id is empty or already in use; then done
// is never called. Every other failure, including an invalid spec, a work
// directory that cannot be created or a missing executable, is reported
// through done with ExitCode -1 and a Reason starting with "start: ".
func (r *Runner) Start(id string, spec Spec, sink LogSink, done func(Result)) error {
	if id == "" {
		return errors.New("runtime: empty task id")
	}
	t := &task{id: id, spec: spec, done: done, out: newOutput(sink), quit: make(chan struct{})}
	t.spec.Command = slices.Clone(spec.Command)
	t.spec.GPUs = slices.Clone(spec.GPUs)
	t.spec.Env = maps.Clone(spec.Env)
	t.spec.ExtraEnv = maps.Clone(spec.ExtraEnv)
	if spec.Container != nil {
		c := *spec.Container
		c.Devices = slices.Clone(c.Devices)
		t.spec.Container = &c
	}

	if err := r.track(t); err != nil {
		return err
	}

	// Holding t.mu while starting makes a concurrent Stop or Kill wait until
	// there is a process to signal.
	t.mu.Lock()
	err := t.start(r)
	t.mu.Unlock()
	if err != nil {
		t.removeEnvFile()
		log.Debugw("task failed to start", "id", id, "err", err)
		res := startFailure(err)
		go r.finish(t, res)
		return nil
	}
	go func() {
		r.finish(t, t.supervise(r))
	}()
	return nil
}

// track registers t under its id, until finish.
func (r *Runner) track(t *task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tasks[t.id]; ok {
		return fmt.Errorf("runtime: task %q is already running", t.id)
	}
	r.tasks[t.id] = t
	if r.active == 0 {
		r.idle = make(chan struct{})
	}
	r.active++
	return nil
}

// finish reports res for t and forgets it.
func (r *Runner) finish(t *task, res Result) {
	t.out.close()
	r.mu.Lock()
	delete(r.tasks, t.id)
	r.mu.Unlock()

	log.Debugw("task finished", "id", t.id, "reason", res.Reason)
	if t.done != nil {
		t.done(res)
	}

	r.mu.Lock()
	r.active--
	if r.active == 0 {
		close(r.idle)
	}
	r.mu.Unlock()
}

func (r *Runner) lookup(id string) *task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tasks[id]
}

// Stop asks the attempt id to end, for cancellation, preemption or drain:
// SIGTERM goes to its whole process group, and SIGKILL follows after the
// spec's grace period if the main process is still running. The result is
// marked Cancelled with a Reason of "cancelled: " followed by reason (or
// just "cancelled" when reason is empty), unless its timeout fired first.
// Stop returns false when id is unknown. Repeated calls have no further
// effect.
func (r *Runner) Stop(id string, reason string) bool {
	t := r.lookup(id)
	if t == nil {
		return false
	}
	t.terminate(stopState{cancelled: true, reason: reason})
	return true
}

// Kill sends SIGKILL to the whole process group of the attempt id at once.
// The result is marked Cancelled with the reason "killed" unless it was
// already being stopped. Kill returns false when id is unknown.
func (r *Runner) Kill(id string) bool {
	t := r.lookup(id)
	if t == nil {
		return false
	}
	t.kill()
	return true
}

// Running returns the sorted ids of the attempts whose done callback has not
// been called yet.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.tasks))
}

// StopAll calls Stop with reason for every tracked attempt, for shutdown.
// Use Wait to wait for them to end.
func (r *Runner) StopAll(reason string) {
	for _, id := range r.Running() {
		r.Stop(id, reason)
	}
}

// Wait blocks until no attempt is tracked and every done callback has
// returned, or until ctx is done, in which case it returns an error
// wrapping ctx.Err().
func (r *Runner) Wait(ctx context.Context) error {
	r.mu.Lock()
	if r.active == 0 {
		r.mu.Unlock()
		return nil
	}
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runtime: wait: %w", ctx.Err())
	}
}
