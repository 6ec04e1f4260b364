package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node/checkpoints"
	"github.com/agora-sched/agora/node/data"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/store"
)

var log = logging.Logger("executor")

// TaskRunner runs the tasks awarded to a node, as runtime.Runner does
// with local processes: Start runs spec under id and calls done once with
// its result; Stop asks a running task to stop (reason is reported),
// Kill ends it at once; Running lists the running ids; StopAll stops every
// task; Wait returns once none runs or ctx ends.
type TaskRunner interface {
	Start(id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result)) error
	Stop(id string, reason string) bool
	Kill(id string) bool
	Running() []string
	StopAll(reason string)
	Wait(ctx context.Context) error
}

// taskQueue bounds the task starts and stops waiting for the task
// goroutine; the caller waits when it is full.
const taskQueue = 4096

// Options configure an Executor.
type Options struct {
	// DataDir holds the tasks' directories (DataDir/tasks/JOB/TASK.REPLICA).
	DataDir string
	// Store keeps the execution records and the task logs.
	Store *store.Store
	// Runner runs the processes; runtime.NewRunner when nil.
	Runner TaskRunner
	// Devices are the node's declared devices, whose units the executor
	// hands to the tasks the market gives them to (units.go).
	Devices []DeviceUnits
	// DiskReserve is the free space on DataDir's file system that tasks
	// may not take (diskguard.go); DefaultDiskReserve when zero.
	DiskReserve int64
	// Checkpoints keeps and moves the checkpoints.
	Checkpoints *checkpoints.Service
	// Data keeps and moves tasks' outputs and inputs; DataRetention is
	// how long outputs are kept (data.MaxRetention when zero).
	Data          *data.Service
	DataRetention time.Duration
	// DataReplicas is how many peers get a copy of a task's outputs.
	DataReplicas int
	// Peers returns up to r live peers not in skip, closest to key first
	// (every one when r < 0): a checkpoint's replica peers.
	Peers func(key string, r int, skip map[peer.ID]bool) []peer.ID
	// HostOf is the address other gang replicas reach a node at.
	HostOf func(market.NodeID) string
	// FetchImage makes the engine hold the image ref names, pinned to ID
	// id, from peers or a registry, before an image task starts (nil: the
	// task fails when the engine lacks it).
	FetchImage func(ctx context.Context, ref, id string) error
	// Exited reports a task's exit, and a success's stored outputs, to
	// the market, waiting until the market has it; it returns false only
	// when the node is stopping.
	Exited func(key market.TaskKey, epoch uint64, exitCode int, reason string, outputs *market.DataRef) bool
	// Users, when set, runs each task as its owner's local account
	// (--task-user map); a task whose owner has none fails to start.
	Users *UserMap
	// Accounted keeps an ended attempt's usage record (market/acct),
	// unsigned and without the node's name and site, which it fills in,
	// and the attempt's manager; it is called before the exit is
	// reported and must have stored the record when it returns. Nil:
	// nothing is accounted.
	Accounted func(rec acct.Record, manager market.NodeID)
	// PreemptGrace is the SIGTERM grace of a stopped task.
	PreemptGrace time.Duration
	// TasksStarted and TasksEnded count attempts started and ended (by
	// outcome, "succeeded" or "failed"); nil: not counted.
	TasksStarted prometheus.Counter
	TasksEnded   *prometheus.CounterVec
}

// Executor runs task attempts.
type Executor struct {
	opts     Options
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	runner   TaskRunner
	store    *store.Store
	execs    *store.Bucket[Execution]
	ck       *checkpoints.Service
	tasksQ   chan func()
	stopping atomic.Bool
	killing  atomic.Bool // Kill: no snapshots, no exit reports
	// downExits are the previous run's attempts that finished while the
	// node was down (reapOrphans).
	downExits []market.TaskExit
	// resumed are the previous run's attempts whose processes were still
	// running at this start, re-attached instead of killed (reapOrphans).
	resumed []market.Resumed

	// mu orders task starts against stops and teardown; it guards the
	// fields below and the stopping flag's changes.
	mu      sync.Mutex
	pending map[string]*pendingStart // run ID → attempt restoring before start
	active  map[string]int           // checkpoint key → attempts of it running here
	// workDirs are the work directories of the attempts started here, by
	// run ID, for the disk reserve (diskguard.go).
	workDirs map[string]string
	// units are the declared devices' units and the runs holding them
	// (units.go).
	units unitTable
}

// New builds an executor, closing the attempts a previous run of the
// node left unfinished (their processes are killed), and starts its
// task goroutine.
func New(opts Options) *Executor {
	ctx, cancel := context.WithCancel(context.Background())
	x := &Executor{opts: opts, ctx: ctx, cancel: cancel, runner: opts.Runner, store: opts.Store, ck: opts.Checkpoints,
		execs: store.NewBucket[Execution](opts.Store, "executions"), tasksQ: make(chan func(), taskQueue),
		pending: map[string]*pendingStart{}, active: map[string]int{}, workDirs: map[string]string{},
		units: newUnitTable(opts.Devices)}
	if x.runner == nil {
		x.runner = runtime.NewRunner(runtime.Options{})
	}
	x.reapOrphans()
	if x.opts.Data != nil {
		x.wg.Add(1)
		go x.sweepData()
	}
	x.wg.Add(3)
	go x.guardDisk()
	go x.taskLoop()
	go func() {
		defer x.wg.Done()
		x.ck.Sweep(x.ctx, x.isActive)
	}()
	return x
}

// Start starts a task attempt, off the caller's goroutine.
func (x *Executor) Start(st market.StartTask) {
	x.onTasks(func() { x.startTask(st, x.opts.PreemptGrace) })
}

// Stop stops a task attempt, off the caller's goroutine, in order with
// the starts.
func (x *Executor) Stop(st market.StopTask) { x.onTasks(func() { x.stopTask(st) }) }

// StopAll stops every running task (a graceful stop of the node): no task
// starts from now on, attempts restoring their checkpoints give up, and
// running ones get SIGTERM and their grace.
func (x *Executor) StopAll(reason string) {
	x.setStopping()
	x.runner.StopAll(reason)
}

// Kill stops every task at once (SIGKILL), as a kill -9 of the node would
// take them down: no snapshot is taken and no exit reported.
func (x *Executor) Kill() {
	x.killing.Store(true)
	x.setStopping()
	for _, id := range x.runner.Running() {
		x.runner.Kill(id)
	}
}

// Wait waits until no task runs or ctx ends.
func (x *Executor) Wait(ctx context.Context) error { return x.runner.Wait(ctx) }

// Close stops the executor's goroutines; tasks should be stopped first.
func (x *Executor) Close() {
	x.setStopping()
	x.cancel()
	x.wg.Wait()
}

func runID(k market.TaskKey, epoch uint64) string {
	return k.String() + "@" + strconv.FormatUint(epoch, 10)
}

// logStream names the combined output of one attempt of a task replica.
func logStream(k market.TaskKey, attempt int) string {
	return fmt.Sprintf("task/%s/%s/%d/%d", k.Job, k.Task, k.Replica, attempt)
}

// Execution is the executor-side record of a task attempt it ran, kept so
// that logs can be served from this node.
type Execution struct {
	Key      market.TaskKey `json:"key"`
	Attempt  int            `json:"attempt"`
	Epoch    uint64         `json:"epoch"`
	Stream   string         `json:"stream"`
	CPUMilli int64          `json:"cpu_milli"`
	GPUs     []int          `json:"gpus,omitempty"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished,omitzero"`
	ExitCode int            `json:"exit_code"`
	Reason   string         `json:"reason,omitempty"`
	// Owner is the user whose job it is, in a network with an authority
	// (who may read its log).
	Owner string `json:"owner,omitempty"`
	// Outputs are the task's declared outputs, kept at a restart for an
	// attempt that succeeded while the node was down.
	Outputs []spec.Output `json:"outputs,omitempty"`
	// Tagged says that every chunk of the attempt's log starts with a
	// byte naming its stream (tagStdout, tagStderr); logs kept before
	// the node told the streams apart have none.
	Tagged bool `json:"tagged,omitempty"`
	// Task, Alloc and Manager are the attempt as the market started it:
	// what a restarted node hands back to its market (market.Resume)
	// when the attempt's process outlived the crash (orphans.go).
	Task    *market.TaskSpec    `json:"task,omitempty"`
	Alloc   resource.Allocation `json:"alloc,omitzero"`
	Manager market.NodeID       `json:"manager,omitempty"`
	// Kept are the outputs a success kept, and Stopped says the market
	// stopped the attempt: a restart soon after the end reports a run
	// that ended by itself again (orphans.go), with them.
	Kept    *market.DataRef `json:"kept,omitempty"`
	Stopped bool            `json:"stopped,omitempty"`
	// Units are the declared devices' units the attempt holds, by entry
	// (units.go): claimed again when a restart re-attaches it.
	Units map[string][]int `json:"units,omitempty"`
}

// Stream tags of a tagged log chunk.
const (
	tagStdout = 'o'
	tagStderr = 'e'
)

// onTasks queues fn for the task goroutine, which starts and stops
// processes in the order the loop asked for them. Creating a task's
// directories and forking its process take milliseconds on a busy
// machine; on the loop they held up every message behind them (the
// next auction's CFP to the node that had just won one, say). It waits
// only when taskQueue operations are already queued.
func (x *Executor) onTasks(fn func()) {
	select {
	case x.tasksQ <- fn:
	case <-x.ctx.Done():
	}
}

// taskLoop runs the queued task operations until the node stops.
func (x *Executor) taskLoop() {
	defer x.wg.Done()
	for {
		select {
		case <-x.ctx.Done():
			return
		case fn := <-x.tasksQ:
			fn()
		}
	}
}

// taskDir is where a task replica's directories are.
func (x *Executor) taskDir(k market.TaskKey) string {
	return filepath.Join(x.opts.DataDir, "tasks", k.Job, fmt.Sprintf("%s.%d", k.Task, k.Replica))
}

// makeTaskDir creates a task replica's directory and those above it
// under the data directory (tasks/, tasks/<job>/) traversable but not
// listable by others (0711), also when they exist already: a task that
// runs under a user ID of its own must reach its work and checkpoint
// directories beneath, which the runtime then makes its own and private.
func (x *Executor) makeTaskDir(dir string) error {
	root := x.opts.DataDir
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("task directory %s is not under the data directory %s", dir, root)
	}
	d := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		if err := os.Mkdir(d, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create task directory: %w", err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("task directory: %w", err)
		}
	}
	return nil
}

// exitFile is where an attempt's exit status is written by the shell that
// runs it (runtime.Spec.ExitFile): in its work directory, which the
// task's user may write.
func exitFile(dir string, epoch uint64) string {
	return filepath.Join(dir, "work", fmt.Sprintf(".agora-exit-%d", epoch))
}

// startTask carries out a StartTask, on the task goroutine; grace is the
// market's PreemptGrace.
func (x *Executor) startTask(st market.StartTask, grace time.Duration) {
	k := st.Task.Key
	dir := x.taskDir(k)
	spec := runtime.Spec{
		JobID: k.Job, Task: k.Task, Replica: k.Replica, Attempt: st.Task.Attempt, Epoch: st.Task.Epoch,
		Command: st.Task.Command, Env: st.Task.Env, WorkDir: filepath.Join(dir, "work"),
		GPUs: st.Alloc.GPUs, Timeout: st.Task.Timeout, Grace: grace,
		CPUMilli: st.Task.Request.CPU, Memory: st.Task.Request.Memory, Disk: st.Task.Request.Disk,
		ExitFile: exitFile(dir, st.Task.Epoch),
	}
	epoch := st.Task.Epoch
	id := runID(k, epoch)
	var devEnv map[string]string
	var devPaths []string
	x.mu.Lock()
	units, uerr := x.units.take(id, st.Alloc.Devices)
	x.mu.Unlock()
	if uerr == nil {
		devEnv, devPaths = deviceEnv(x.opts.Devices, units)
	}
	if len(devEnv) > 0 && spec.ExtraEnv == nil {
		spec.ExtraEnv = map[string]string{}
	}
	maps.Copy(spec.ExtraEnv, devEnv)
	if st.Task.Image != "" {
		spec.Container = &runtime.Container{Image: st.Task.Image, ID: st.Task.ImageID, Devices: devPaths}
	}
	_ = os.Remove(spec.ExitFile) // planted by an earlier attempt in the same directory, it would lie
	if len(st.Task.Peers) > 0 {
		hosts := make([]string, len(st.Task.Peers))
		for i, p := range st.Task.Peers {
			hosts[i] = x.opts.HostOf(p)
		}
		if spec.ExtraEnv == nil {
			spec.ExtraEnv = map[string]string{}
		}
		maps.Copy(spec.ExtraEnv, map[string]string{ // beside a device's variables
			"AGORA_RANK":        strconv.Itoa(st.Task.Rank),
			"AGORA_WORLD_SIZE":  strconv.Itoa(len(hosts)),
			"AGORA_PEERS":       strings.Join(hosts, ","),
			"AGORA_MASTER_ADDR": hosts[0],
		})
	}
	if err := x.makeTaskDir(dir); err != nil {
		log.Warnw("task directory", "task", k, "err", err) // the start then fails, saying why
	}
	var ck *ckRun
	if st.Task.CheckpointInterval > 0 {
		spec.CheckpointDir = filepath.Join(dir, "checkpoint")
		_ = os.MkdirAll(spec.CheckpointDir, 0o700)
		ck = x.newCkRun(st.Task, spec.CheckpointDir)
	}
	stream := logStream(k, st.Task.Attempt)
	ex := Execution{Key: k, Attempt: st.Task.Attempt, Epoch: st.Task.Epoch, Stream: stream, Started: time.Now(),
		CPUMilli: st.Task.Request.CPU, GPUs: st.Alloc.GPUs, Owner: st.Task.Owner, Outputs: st.Task.Outputs, Tagged: true,
		Task: &st.Task, Alloc: st.Alloc, Manager: st.Manager, Units: units}
	if err := x.execs.Put(stream, ex); err != nil {
		log.Warnw("save execution", "err", err)
	}
	sink := runtime.LogSinkFunc(func(name string, data []byte) {
		tagged := make([]byte, 1+len(data))
		tagged[0] = tagStdout
		if name == runtime.StreamStderr {
			tagged[0] = tagStderr
		}
		copy(tagged[1:], data)
		if _, err := x.store.AppendLog(stream, tagged); err != nil {
			log.Warnw("append log", "task", k, "err", err)
		}
	})
	x.mu.Lock()
	x.workDirs[id] = spec.WorkDir
	x.mu.Unlock()
	ended := x.ended(st, spec.WorkDir, ck, stream, ex)
	done := func(r runtime.Result) {
		x.mu.Lock()
		delete(x.workDirs, id)
		x.units.give(id)
		x.mu.Unlock()
		ended(r)
	}
	if uerr == nil && x.opts.Users != nil {
		var acc Account
		if acc, uerr = x.opts.Users.Account(st.Task.Owner); uerr == nil {
			spec.User = &acc.ID
			if spec.ExtraEnv == nil {
				spec.ExtraEnv = map[string]string{}
			}
			spec.ExtraEnv["USER"], spec.ExtraEnv["LOGNAME"], spec.ExtraEnv["HOME"] = acc.Name, acc.Name, acc.Home
		}
	}
	if uerr != nil {
		go done(runtime.Result{ExitCode: -1, Reason: "start: " + uerr.Error(), Finished: time.Now()})
		return
	}
	if (len(st.Task.Inputs) > 0 || x.fetchesImage(st.Task)) && !x.stopping.Load() {
		if len(st.Task.Inputs) > 0 && x.opts.Data == nil {
			go done(runtime.Result{ExitCode: -1, Reason: "start: this node cannot fetch inputs", Finished: time.Now()})
			return
		}
		x.inputsThenStart(st.Task, runID(k, epoch), spec, sink, done, ck)
		return
	}
	if ck != nil && (st.Task.Attempt > 1 || epoch > 1) && !x.stopping.Load() {
		x.resumeThenStart(ck, runID(k, epoch), spec, sink, done)
		return
	}
	x.launch(runID(k, epoch), spec, sink, done, ck)
}

// ended is what happens when an attempt ends: its outputs kept, its
// checkpoints finished, its execution record closed, its exit reported
// to the market (retried until the market takes it).
func (x *Executor) ended(st market.StartTask, workDir string, ck *ckRun, stream string, ex Execution) func(runtime.Result) {
	k, epoch := st.Task.Key, st.Task.Epoch
	return func(r runtime.Result) {
		var outputs *market.DataRef
		if r.ExitCode == 0 && !r.Cancelled && !r.TimedOut && len(st.Task.Outputs) > 0 && !x.killing.Load() {
			// Kept and copied before the success is reported: the tasks
			// after it find them even if this node goes at once.
			var err error
			if outputs, err = x.saveOutputs(st.Task, workDir); err != nil {
				r.ExitCode, r.Reason = -1, "keeping outputs: "+err.Error()
			}
		}
		x.finishCheckpoints(ck, r) // before the report: the next attempt resumes from it
		r.Reason = wire.ClipText(r.Reason, wire.MaxReasonLen)
		ex.Finished, ex.ExitCode, ex.Reason = r.Finished, r.ExitCode, r.Reason
		ex.Kept, ex.Stopped = outputs, r.Cancelled
		if !r.Started.IsZero() {
			ex.Started = r.Started // when the process actually started
		}
		if err := x.execs.Put(stream, ex); err != nil {
			log.Warnw("save execution", "err", err)
		}
		if x.opts.Accounted != nil && !x.killing.Load() {
			x.opts.Accounted(usageRecord(st.Task, st.Alloc, r), st.Manager)
		}
		if x.opts.TasksEnded != nil {
			outcome := "failed"
			if r.ExitCode == 0 {
				outcome = "succeeded"
			}
			x.opts.TasksEnded.WithLabelValues(outcome).Inc()
		}
		if x.killing.Load() {
			return // a killed node reports nothing; its peers notice it is gone
		}
		// Exited waits for the market to take the report; it fails only
		// as the node stops, and the execution record saved above reports
		// the exit again after a restart (ExitedWhileDown).
		x.opts.Exited(k, epoch, r.ExitCode, r.Reason, outputs)
	}
}

// Executions lists the attempts of a job's tasks this node ran or runs,
// from its execution records (kept a retention after they end).
func (x *Executor) Executions(job string) ([]Execution, error) {
	var out []Execution
	err := x.execs.Scan("task/"+job+"/", func(_ string, e Execution) (bool, error) {
		out = append(out, e)
		return true, nil
	})
	return out, err
}
