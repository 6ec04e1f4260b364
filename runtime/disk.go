package runtime

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// Disk limits. A task's work directory holds what it writes; no file
// system quota is assumed (project quotas are rarely enabled, and a
// size-capped image needs loop devices a container may not have), so
// the limit is kept by measurement: every DiskEvery the task's work
// directory is measured (the blocks its files take, each inode once),
// and a task past its limit is killed, its result naming the limit.
// Between two measurements a task may write up to DiskEvery of its
// write rate past the limit; the node's own reserve (node/executor's
// disk guard) catches a burst that would fill the disk.

// DiskEvery is how often a task's work directory is measured.
var DiskEvery = 500 * time.Millisecond

// DirBytes is the space the files under dir take on disk: their blocks,
// each inode counted once; what cannot be read is left out.
func DirBytes(dir string) int64 {
	var total int64
	seen := map[[2]uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone or unreadable: left out
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			total += info.Size()
			return nil
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if st.Nlink > 1 {
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		total += st.Blocks * 512
		return nil
	})
	return total
}

// watchDisk kills t once its work directory holds more than its limit;
// it returns when the task's main process has exited.
func (t *task) watchDisk(dir string) {
	tick := time.NewTicker(DiskEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.quit:
			return
		case <-tick.C:
		}
		if used := DirBytes(dir); used > t.spec.Disk {
			t.killFor(fmt.Sprintf("killed: over its disk limit, %s in its work directory against the %s it asked for (resources.disk)",
				formatBytes(used), formatBytes(t.spec.Disk)))
			return
		}
	}
}

// killFor kills the task's group at once for a limit it broke: its
// result is a failure that gives reason.
func (t *task) killFor(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if (t.cmd == nil && !t.adopted) || t.exited {
		return
	}
	if !t.stop.timedOut && !t.stop.cancelled && t.stop.limit == "" {
		t.stop.limit = reason
	}
	t.signalLocked(syscall.SIGKILL)
}

// KillFor kills the attempt id at once for a limit it broke: its result
// is a failure (not a cancellation) whose reason is reason. It returns
// false when id is unknown.
func (r *Runner) KillFor(id, reason string) bool {
	t := r.lookup(id)
	if t == nil {
		return false
	}
	t.killFor(reason)
	return true
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
