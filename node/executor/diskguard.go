package executor

import (
	"fmt"
	"syscall"
	"time"

	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/store"
)

// The node's disk reserve. Each task's own limit (resources.disk) is kept
// by the runtime; a task that asked for none, or several together, could
// still fill the file system of the node's data directory, and the node
// would then refuse every user's work (the store's ErrNoSpace). So the
// executor keeps a reserve there that tasks may not take: while less is
// free, it kills the running task that holds the most in its work
// directory, its result naming the reserve, one every DiskGuardEvery.

// DefaultDiskReserve is the free space a node keeps from its tasks: the
// store's own reserve and room beside it for records, logs and
// checkpoints (128 MiB in all).
const DefaultDiskReserve = store.Reserve + 64<<20

// DiskGuardEvery is how often the reserve is looked at.
var DiskGuardEvery = time.Second

// limitKiller is a TaskRunner that can kill a task for a limit it broke
// (runtime.Runner).
type limitKiller interface {
	KillFor(id, reason string) bool
}

// freeBytes is the space an unprivileged writer may still use on the file
// system of dir.
var freeBytes = func(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// guardDisk runs until the executor closes.
func (x *Executor) guardDisk() {
	defer x.wg.Done()
	reserve := x.opts.DiskReserve
	if reserve <= 0 {
		reserve = DefaultDiskReserve
	}
	tick := time.NewTicker(DiskGuardEvery)
	defer tick.Stop()
	for {
		select {
		case <-x.ctx.Done():
			return
		case <-tick.C:
		}
		x.checkReserve(reserve)
	}
}

// checkReserve kills the largest task when less than reserve is free.
func (x *Executor) checkReserve(reserve int64) {
	free, err := freeBytes(x.opts.DataDir)
	if err != nil || free >= reserve {
		return
	}
	lk, ok := x.runner.(limitKiller)
	if !ok {
		return
	}
	x.mu.Lock()
	dirs := make(map[string]string, len(x.workDirs))
	for id, d := range x.workDirs {
		dirs[id] = d
	}
	x.mu.Unlock()
	var worst string
	var most int64 = -1
	for id, d := range dirs {
		if n := runtime.DirBytes(d); n > most {
			worst, most = id, n
		}
	}
	if worst == "" {
		return
	}
	lk.KillFor(worst, fmt.Sprintf("killed: the node's disk is nearly full (%d MiB free; it keeps %d MiB from its tasks), and this task held the most in its work directory (%d MiB)",
		free>>20, reserve>>20, most>>20))
}
