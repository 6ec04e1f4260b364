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
	"github.com/agora-sched/agora/store"
)

// ExitedWhileDown lists the attempts of the previous run that finished
// while the node was down, for the market (market.Reclaim).
func (x *Executor) ExitedWhileDown() []market.TaskExit { return x.downExits }

// reapOrphans kills task processes left behind by a previous run of this
// node that died without stopping them (kill -9, crash): for every
// attempt the store says started and never finished, any process whose
// environment names that attempt (job, task, replica, epoch) is killed
// with its process group, and the attempt is closed. Linux only; it does
// nothing where /proc is missing.
func (x *Executor) reapOrphans() {
	// The unfinished attempts only, read with Scan: a node may keep more
	// executions than List returns (store.MaxListEntries).
	var exs []store.Entry[Execution]
	err := x.execs.Scan("", func(key string, ex Execution) (bool, error) {
		if ex.Finished.IsZero() {
			exs = append(exs, store.Entry[Execution]{Key: key, Value: ex})
		}
		return true, nil
	})
	if err != nil {
		log.Warnw("read executions to reap orphans", "err", err)
		return
	}
	want := map[string]string{} // env signature → stream
	for _, e := range exs {
		k := e.Value.Key
		sig := strings.Join([]string{"AGORA_JOB_ID=" + k.Job, "AGORA_TASK=" + k.Task,
			"AGORA_REPLICA=" + strconv.Itoa(k.Replica), "AGORA_EPOCH=" + strconv.FormatUint(e.Value.Epoch, 10)}, "\x00")
		want[sig] = e.Key
	}
	if len(want) == 0 {
		return
	}
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
		for sig := range want {
			match := true
			for _, kv := range strings.Split(sig, "\x00") {
				match = match && vars[kv]
			}
			if !match {
				continue
			}
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if err != nil || pid <= 1 || pid == os.Getpid() {
				continue
			}
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			log.Warnw("killed a task process left by the previous run", "pid", pid, "execution", want[sig])
		}
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
		x.downExits = append(x.downExits, market.TaskExit{Key: ex.Key, Epoch: ex.Epoch, ExitCode: ex.ExitCode, Reason: ex.Reason, Time: now, Outputs: outputs})
	}
	if err := x.execs.PutAll(exs); err != nil {
		log.Warnw("close the attempts of the previous run", "err", err)
	}
}
