package executor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/store"
)

// ExitedWhileDown lists the attempts of the previous run that finished
// while the node was down, for the market (market.Reclaim).
func (x *Executor) ExitedWhileDown() []market.TaskExit { return x.downExits }

// Resumed lists the attempts of the previous run whose processes were
// still running at this start and were re-attached, for the market
// (market.Resume).
func (x *Executor) Resumed() []market.Resumed { return x.resumed }

// reportAgainWithin is how long after an attempt's end a restarted node
// reports it again: as long as its market repeats an unacknowledged
// final report (about a minute), and more.
const reportAgainWithin = 2 * time.Minute

// Adopter is a TaskRunner that can take over a process a previous run of
// the node started (runtime.Runner can).
type Adopter interface {
	Adopt(id string, o runtime.Orphan, done func(runtime.Result)) error
}

// reapOrphans deals with the attempts a previous run of this node left
// unfinished when it died without stopping them (kill -9, crash): for
// every attempt the store says started and never finished, the
// processes whose environment names that attempt (job, task, replica,
// epoch) are found. One still running is re-attached when it can be (its
// record holds the attempt as the market started it, it is no gang
// replica, and the runner adopts processes): it runs on, and its exit is
// reported as any other's, so a restart never starts it a second time.
// Otherwise its processes are killed with their process groups, and the
// attempt is closed — reported as finished while the node was down when
// its wrapper left an exit status. Linux only; it does nothing where
// /proc is missing.
func (x *Executor) reapOrphans() {
	// The unfinished attempts only, read with Scan: a node may keep more
	// executions than List returns (store.MaxListEntries).
	var exs []store.Entry[Execution]
	start := time.Now()
	err := x.execs.Scan("", func(key string, ex Execution) (bool, error) {
		if ex.Finished.IsZero() {
			exs = append(exs, store.Entry[Execution]{Key: key, Value: ex})
		} else if start.Sub(ex.Finished) < reportAgainWithin && ex.ExitCode >= 0 && !ex.Stopped && ex.Manager != "" {
			// Ended shortly before the node went down: its final report,
			// or the manager's ack, may have been lost with it. Reported
			// again (a repeat changes nothing; market.TaskExit).
			x.downExits = append(x.downExits, market.TaskExit{Key: ex.Key, Epoch: ex.Epoch, Attempt: ex.Attempt, ExitCode: ex.ExitCode,
				Reason: ex.Reason, Time: ex.Finished, Outputs: ex.Kept, Manager: ex.Manager})
		}
		return true, nil
	})
	if err != nil {
		log.Warnw("read executions to reap orphans", "err", err)
		return
	}
	want := map[string]int{} // env signature → index in exs
	for i, e := range exs {
		k := e.Value.Key
		sig := strings.Join([]string{"AGORA_JOB_ID=" + k.Job, "AGORA_TASK=" + k.Task,
			"AGORA_REPLICA=" + strconv.Itoa(k.Replica), "AGORA_EPOCH=" + strconv.FormatUint(e.Value.Epoch, 10)}, "\x00")
		want[sig] = i
	}
	if len(want) == 0 {
		return
	}
	found := map[int][]int{} // index in exs → its live processes
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		vars := map[string]bool{}
		for _, kv := range bytes.Split(env, []byte{0}) {
			vars[string(kv)] = true
		}
		for sig, i := range want {
			match := true
			for _, kv := range strings.Split(sig, "\x00") {
				match = match && vars[kv]
			}
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if match && err == nil && pid > 1 && pid != os.Getpid() {
				found[i] = append(found[i], pid)
			}
		}
	}
	adopted := map[int]bool{}
	for i, pids := range found {
		if x.adopt(exs[i], pids) {
			adopted[i] = true
			continue
		}
		for _, pid := range pids {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			log.Warnw("killed a task process left by the previous run", "pid", pid, "execution", exs[i].Key)
		}
	}
	if len(adopted) > 0 {
		kept := exs[:0]
		for i, e := range exs {
			if !adopted[i] {
				kept = append(kept, e)
			}
		}
		exs = kept
	}
	// An attempt that finished while the node was down left its exit
	// status (runtime.Spec.ExitFile): it is reported, not run again. This
	// is read after the orphans are killed, so that one that finished
	// meanwhile counts as finished.
	now := time.Now()
	for i := range exs {
		ex := &exs[i].Value
		ex.Finished, ex.ExitCode, ex.Reason = now, -1, "node restarted"
		b, err := os.ReadFile(exitFile(x.taskDir(ex.Key), ex.Epoch))
		if err != nil {
			continue
		}
		code, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || code < 0 || code > 255 {
			continue
		}
		ex.ExitCode, ex.Reason = code, fmt.Sprintf("exit status %d (finished while the node was down)", code)
		var outputs *market.DataRef
		if code == 0 && len(ex.Outputs) > 0 && x.opts.Data != nil {
			// Kept here now; copies go to peers once they are known.
			t := market.TaskSpec{TaskOffer: market.TaskOffer{Key: ex.Key}, Epoch: ex.Epoch, Attempt: ex.Attempt, Outputs: ex.Outputs}
			if outputs, err = x.saveOutputs(t, filepath.Join(x.taskDir(ex.Key), "work")); err != nil {
				ex.ExitCode, ex.Reason = -1, "keeping outputs: "+err.Error()
			}
		}
		x.downExits = append(x.downExits, market.TaskExit{Key: ex.Key, Epoch: ex.Epoch, Attempt: ex.Attempt, ExitCode: ex.ExitCode, Reason: ex.Reason, Time: now, Outputs: outputs, Manager: ex.Manager})
	}
	if err := x.execs.PutAll(exs); err != nil {
		log.Warnw("close the attempts of the previous run", "err", err)
	}
}

// adopt re-attaches an attempt of the previous run whose processes pids
// still run, when it can (see reapOrphans); it reports whether it did.
func (x *Executor) adopt(e store.Entry[Execution], pids []int) bool {
	ex := e.Value
	ad, ok := x.runner.(Adopter)
	if !ok || ex.Task == nil || len(ex.Task.Peers) > 0 || ex.Task.Epoch != ex.Epoch {
		return false
	}
	leader := 0
	for _, pid := range pids {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			leader = pid
		}
	}
	if leader == 0 {
		return false
	}
	k := ex.Key
	dir := x.taskDir(k)
	st := market.StartTask{Task: *ex.Task, Alloc: ex.Alloc, Manager: ex.Manager}
	ended := x.ended(st, filepath.Join(dir, "work"), nil, e.Key, ex)
	o := runtime.Orphan{PID: leader, Started: ex.Started, ExitFile: exitFile(dir, ex.Epoch), Timeout: ex.Task.Timeout, Grace: x.opts.PreemptGrace,
		Container: ex.Task.Image != ""}
	run := runID(k, ex.Epoch)
	x.mu.Lock()
	x.units.claim(run, ex.Units)
	x.mu.Unlock()
	done := func(r runtime.Result) {
		x.mu.Lock()
		x.units.give(run)
		x.mu.Unlock()
		ended(r)
	}
	if err := ad.Adopt(run, o, done); err != nil {
		x.mu.Lock()
		x.units.give(run)
		x.mu.Unlock()
		log.Warnw("re-attach a task left running by the previous run", "execution", e.Key, "err", err)
		return false
	}
	x.resumed = append(x.resumed, market.Resumed{Task: *ex.Task, Alloc: ex.Alloc, Manager: ex.Manager, Started: ex.Started})
	return true
}
