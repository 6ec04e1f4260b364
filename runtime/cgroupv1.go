package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup v1. Where the node is in no usable cgroup v2 tree but the v1
// hierarchies of the memory, cpu and pids controllers are mounted and
// writable (as on hosts that still mount v1), each task gets a cgroup in
// each, under the node's own: agora-tasks/<task>. v1 has no
// CLONE_INTO_CGROUP, so a task is forked from a thread that joined its
// cgroups just before (a child starts in its parent thread's cgroups)
// and returns right after: no process of the task ever runs outside them.

// v1Controllers are the hierarchies a task gets a cgroup in; cpuacct
// measures its CPU time.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids"}

// cgroupV1 is where the node's own cgroups are, per controller.
type cgroupV1 struct {
	home map[string]string // controller → the node's cgroup directory in its hierarchy
}

// detectV1 finds the node's cgroup directory in each v1 hierarchy of
// v1Controllers that is mounted and writable; it needs at least memory
// or cpu.
func detectV1(mountinfo, cgroupFile string) (*cgroupV1, error) {
	data, err := os.ReadFile(cgroupFile)
	if err != nil {
		return nil, err
	}
	paths := map[string]string{} // controller → the node's cgroup path in its hierarchy
	for line := range strings.Lines(string(data)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 || f[1] == "" {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	v := &cgroupV1{home: map[string]string{}}
	err = scanMounts(mountinfo, "cgroup", func(root, mountPoint string, superOpts []string) bool {
		for _, c := range v1Controllers {
			p, in := paths[c]
			if !in || !slices.Contains(superOpts, c) || v.home[c] != "" {
				continue
			}
			if rel, ok := relCgroupPath(root, p); ok {
				if dir := filepath.Join(mountPoint, rel); syscall.Access(dir, 2 /* W_OK */) == nil {
					v.home[c] = dir
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if v.home["memory"] == "" && v.home["cpu"] == "" {
		return nil, errors.New("runtime: no writable cgroup v1 memory or cpu hierarchy")
	}
	return v, nil
}

// createV1 makes task id's cgroups with spec's limits (and pids, when
// above zero).
func (v *cgroupV1) create(id string, spec Spec, pids int) *taskCgroup {
	cg := &taskCgroup{v1: map[string]string{}, home: v.home, memory: spec.Memory}
	for c, home := range v.home {
		dir := filepath.Join(home, "agora-tasks", cgroupName(id))
		_ = syscall.Rmdir(dir) // left over from an earlier node process
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Debugw("cannot create task cgroup", "id", id, "controller", c, "err", err)
			continue
		}
		cg.v1[c] = dir
		set := func(file, value string) {
			if err := writeCgroupFile(filepath.Join(dir, file), value); err != nil {
				log.Debugw("cannot set cgroup limit", "id", id, "file", file, "err", err)
			}
		}
		switch c {
		case "memory":
			if spec.Memory > 0 {
				set("memory.limit_in_bytes", strconv.FormatInt(spec.Memory, 10))
				// Swap must not hold what memory may not: where swap is
				// accounted, it has the same limit.
				_ = writeCgroupFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), strconv.FormatInt(spec.Memory, 10))
			}
		case "cpu":
			// Set once the task is forked (setQuota): the forking thread
			// joins this cgroup for the fork, and a small quota would
			// throttle it, and every start behind it.
			if spec.CPUMilli > 0 {
				cg.quota = cpuMax(spec.CPUMilli)
			}
		case "pids":
			if pids > 0 {
				set("pids.max", strconv.Itoa(pids))
			}
		}
	}
	if len(cg.v1) == 0 {
		return nil
	}
	return cg
}

// enterThread moves the calling OS thread into the task's v1 cgroups, so
// that what it forks starts there (in at least one: the task is whole
// there); leaveThread moves it back.
func (c *taskCgroup) enterThread() {
	if c != nil && len(c.v1) > 0 {
		c.whole = c.moveThread(func(ctrl string) string { return c.v1[ctrl] }) > 0
	}
}

func (c *taskCgroup) leaveThread() {
	c.moveThread(func(ctrl string) string { return c.home[ctrl] })
	c.setQuota()
}

// setQuota sets the v1 CPU quota held back for the fork.
func (c *taskCgroup) setQuota() {
	if c == nil || c.quota == "" || c.v1["cpu"] == "" {
		return
	}
	quota, period, _ := strings.Cut(c.quota, " ")
	for file, v := range map[string]string{"cpu.cfs_period_us": period, "cpu.cfs_quota_us": quota} {
		if err := writeCgroupFile(filepath.Join(c.v1["cpu"], file), v); err != nil {
			log.Debugw("cannot set cgroup limit", "file", file, "err", err)
		}
	}
}

// moveThread moves the calling thread into dir of each of the task's
// controllers and returns into how many it went.
func (c *taskCgroup) moveThread(dir func(string) string) int {
	if c == nil || len(c.v1) == 0 {
		return 0
	}
	tid := strconv.Itoa(syscall.Gettid())
	moved := 0
	for ctrl := range c.v1 {
		if err := writeCgroupFile(filepath.Join(dir(ctrl), "tasks"), tid); err != nil {
			log.Debugw("cannot move the spawning thread", "controller", ctrl, "err", err)
			continue
		}
		moved++
	}
	return moved
}

// killV1 kills every process in the task's v1 cgroups until none is left,
// and says whether none is.
func (c *taskCgroup) killV1() bool {
	_, clean := killAll(func() []int {
		var pids []int
		for _, dir := range c.v1 {
			data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	})
	return clean
}

// oomKilled reports whether the kernel killed a process of the task for
// going over its memory limit.
func (c *taskCgroup) oomKilled() bool {
	if c == nil || c.memory <= 0 {
		return false
	}
	file := filepath.Join(c.dir, "memory.events") // v2
	if d, ok := c.v1["memory"]; ok {
		file = filepath.Join(d, "memory.oom_control")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			n, _ := strconv.Atoi(v)
			return n > 0
		}
	}
	return false
}

// cpuUsage is the CPU time the task's processes used so far.
func (c *taskCgroup) cpuUsage() (time.Duration, error) {
	if c == nil {
		return 0, errors.New("no cgroup")
	}
	if d, ok := c.v1["cpuacct"]; ok {
		data, err := os.ReadFile(filepath.Join(d, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return time.Duration(ns), err
	}
	data, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", c.dir)
}

// usage is what the task's cgroup counted: its CPU time and memory peak
// (memory.max_usage_in_bytes on v1, memory.peak on v2 where the kernel
// has it, 5.19 on); false when there is no cgroup or no CPU counter.
func (c *taskCgroup) usage() (Usage, bool) {
	cpu, err := c.cpuUsage()
	if err != nil {
		return Usage{}, false
	}
	u := Usage{CPU: cpu, Source: UsageCgroup}
	file := filepath.Join(c.dir, "memory.peak")
	if d, ok := c.v1["memory"]; ok {
		file = filepath.Join(d, "memory.max_usage_in_bytes")
	}
	if data, err := os.ReadFile(file); err == nil {
		u.MemPeak, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	}
	return u, true
}

// zombie reports whether pid has exited and awaits its reaping (or is
// gone).
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}
