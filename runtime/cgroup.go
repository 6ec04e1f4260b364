package runtime

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Best-effort cgroup v2 limits. When the node's own cgroup (or
// Options.CgroupParent) is a writable cgroup v2 directory with the cpu or
// memory controller enabled for its children, each task gets a child cgroup
// with cpu.max and memory.max set from its Spec and is started straight into
// it. Anything missing along the way is logged at debug level and the task
// runs without limits: the scheduler does its own accounting.

const (
	cgroupCPUPeriod   = 100000 // cpu.max period, in microseconds
	cgroupMinCPUQuota = 1000   // smallest cpu.max quota the kernel accepts
)

// cgroupManager creates task cgroups under parent (v2), or in the v1
// hierarchies (v1 set).
type cgroupManager struct {
	parent string
	cpu    bool // the cpu controller is enabled for parent's children
	memory bool // the memory controller is enabled for parent's children
	pids   bool // the pids controller is enabled for parent's children
	v1     *cgroupV1
	// pidsMax bounds every task's processes (Options.PidsMax); 0: no bound.
	pidsMax int
}

// writeCgroupFile writes one value to a cgroup interface file.
func writeCgroupFile(path, value string) error {
	return os.WriteFile(path, []byte(value), 0o644)
}

// cgroupName returns the directory name of the cgroup for task id: a
// readable, sanitized prefix plus a hash that keeps distinct ids distinct.
func cgroupName(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	clean := []byte(id)
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			clean[i] = '_'
		}
	}
	if len(clean) > 64 {
		clean = clean[:64]
	}
	return fmt.Sprintf("agora-%s-%08x", clean, h.Sum32())
}

// cpuMax formats cpu.max for a limit in thousandths of a CPU.
func cpuMax(milli int64) string {
	quota := milli * cgroupCPUPeriod / 1000
	if quota < cgroupMinCPUQuota {
		quota = cgroupMinCPUQuota
	}
	return fmt.Sprintf("%d %d", quota, cgroupCPUPeriod)
}

// taskCgroup is one task's cgroup. Its methods accept a nil receiver, which
// stands for "no cgroup".
type taskCgroup struct {
	dir    string
	dirFD  *os.File          // open directory, for starting the process inside it
	v1     map[string]string // v1: controller → the task's cgroup directory
	home   map[string]string // v1: controller → the node's own cgroup directory
	memory int64             // the memory limit, for the reason of an OOM kill
	quota  string            // v1: the CPU quota to set once forked ("QUOTA PERIOD")
	// whole says the task's first process started inside the cgroup (v2:
	// through CgroupFD; v1: forked by a thread inside it), so that every
	// process of the task is in it: a task cannot move itself out of a
	// cgroup the node made. Killing the cgroup then kills the whole task.
	whole bool
}

// create makes the cgroup for task id with spec's limits. It returns nil,
// after a debug log, when that is not possible.
func (m *cgroupManager) create(id string, spec Spec) *taskCgroup {
	if m == nil {
		return nil
	}
	if m.v1 != nil {
		return m.v1.create(id, spec, m.pidsMax)
	}
	dir := filepath.Join(m.parent, cgroupName(id))
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		// Left over from an earlier node process; reusable once empty.
		_ = syscall.Rmdir(dir)
		err = os.Mkdir(dir, 0o755)
	}
	if err != nil {
		log.Debugw("cannot create task cgroup", "id", id, "err", err)
		return nil
	}
	set := func(file, value string) {
		if err := writeCgroupFile(filepath.Join(dir, file), value); err != nil {
			log.Debugw("cannot set cgroup limit", "id", id, "file", file, "err", err)
		}
	}
	if m.cpu && spec.CPUMilli > 0 {
		set("cpu.max", cpuMax(spec.CPUMilli))
	}
	if m.memory && spec.Memory > 0 {
		set("memory.max", strconv.FormatInt(spec.Memory, 10))
		set("memory.swap.max", "0")
		set("memory.oom.group", "1")
	}
	if m.pids && m.pidsMax > 0 {
		set("pids.max", strconv.Itoa(m.pidsMax))
	}
	cg := &taskCgroup{dir: dir, memory: spec.Memory}
	if f, err := os.Open(dir); err == nil {
		cg.dirFD = f
	}
	return cg
}

// fd returns the descriptor for SysProcAttr.CgroupFD, or -1.
func (c *taskCgroup) fd() int {
	if c == nil || c.dirFD == nil {
		return -1
	}
	return int(c.dirFD.Fd())
}

// closeFD releases the directory descriptor once the process has started.
func (c *taskCgroup) closeFD() {
	if c != nil && c.dirFD != nil {
		c.dirFD.Close()
		c.dirFD = nil
	}
}

// addProcess moves pid into the cgroup, for when it could not be started
// there directly.
func (c *taskCgroup) addProcess(pid int) {
	if c == nil || len(c.v1) > 0 {
		return
	}
	if err := writeCgroupFile(filepath.Join(c.dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		log.Debugw("cannot move task into cgroup", "dir", c.dir, "err", err)
	}
}

// kill kills every process in the cgroup, including any that left the
// task's process group, where the kernel supports cgroup.kill (v2) or
// until its process lists are empty (v1). It reports whether that killed
// the whole task: the cgroup held all of it (whole) and the kill took.
// Only then may the caller skip looking for the task's processes by user
// ID, a scan of all of /proc that costs a busy host more than the task.
func (c *taskCgroup) kill() (all bool) {
	if c == nil {
		return false
	}
	if len(c.v1) > 0 {
		return c.killV1() && c.whole
	}
	f, err := os.OpenFile(filepath.Join(c.dir, "cgroup.kill"), os.O_WRONLY, 0)
	if err != nil {
		return false // older kernel, or not a real cgroup
	}
	defer f.Close()
	if _, err := f.WriteString("1"); err != nil {
		log.Debugw("cgroup.kill failed", "dir", c.dir, "err", err)
		return false
	}
	return c.whole
}

// remove deletes the cgroup, retrying briefly while killed processes finish
// exiting.
func (c *taskCgroup) remove() {
	if c == nil {
		return
	}
	c.closeFD()
	if len(c.v1) > 0 {
		for _, d := range c.v1 {
			(&taskCgroup{dir: d}).remove()
		}
		return
	}
	deadline := time.Now().Add(time.Second)
	for {
		err := syscall.Rmdir(c.dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			log.Debugw("cannot remove task cgroup", "dir", c.dir, "err", err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
