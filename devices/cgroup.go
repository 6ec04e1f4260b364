package devices

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// cgroupRoot is where cgroup hierarchies are mounted, relative to the
// host file system's root.
const cgroupRoot = "sys/fs/cgroup"

// cgroupEntry is one line of proc/self/cgroup: the controllers of a v1
// hierarchy (none for the v2 unified hierarchy) and the process's path in
// it.
type cgroupEntry struct {
	unified     bool
	controllers []string
	path        string
}

// readCgroups parses proc/self/cgroup. When the file cannot be read, it
// assumes the process sits at the root of both a v2 and a v1 hierarchy,
// which is what a container with its own cgroup namespace sees.
func readCgroups(fsys fs.FS) []cgroupEntry {
	data, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return []cgroupEntry{
			{unified: true, path: "/"},
			{controllers: []string{"cpu", "cpuacct"}, path: "/"},
			{controllers: []string{"memory"}, path: "/"},
		}
	}
	var out []cgroupEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		e := cgroupEntry{path: parts[2]}
		if parts[0] == "0" && parts[1] == "" {
			e.unified = true
		} else {
			e.controllers = strings.Split(parts[1], ",")
		}
		out = append(out, e)
	}
	return out
}

func (e cgroupEntry) has(controller string) bool {
	for _, c := range e.controllers {
		if c == controller {
			return true
		}
	}
	return false
}

// cgroupDirs lists, innermost first, the directories that may hold the
// limits applying to a process at cgroup path p in a hierarchy mounted at
// mount: p itself and each of its ancestors up to the mount point. A
// container that sees its host's path but has only its own cgroup mounted
// finds its limits at the mount point.
func cgroupDirs(mount, p string) []string {
	p = path.Clean("/" + p)
	var dirs []string
	for {
		dirs = append(dirs, path.Join(mount, p))
		if p == "/" {
			return dirs
		}
		p = path.Dir(p)
	}
}

// v1Mounts lists where a v1 hierarchy with the given controllers may be
// mounted: under the joined controller names ("cpu,cpuacct") or under the
// wanted controller's own name, which is usually a link to the former.
func v1Mounts(e cgroupEntry, want string) []string {
	m := []string{path.Join(cgroupRoot, strings.Join(e.controllers, ","))}
	if len(e.controllers) > 1 {
		m = append(m, path.Join(cgroupRoot, want))
	}
	return m
}

// readInt reads a file holding one integer, or "max" (reported as -1).
func readInt(fsys fs.FS, name string) (int64, bool) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return -1, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// limit is the tightest cgroup limit found and the file that set it.
type limit struct {
	value  int64
	source string
}

func (l *limit) offer(v int64, file string) {
	if v <= 0 {
		return
	}
	if l.source == "" || v < l.value {
		l.value, l.source = v, "/"+file
	}
}

// cgroupCPULimit returns the tightest CPU quota, in millicores, set by a
// v2 cpu.max or a v1 cpu.cfs_quota_us on the process's cgroup or any of
// its ancestors. ok is false when no quota is set.
func cgroupCPULimit(fsys fs.FS) (l limit, ok bool) {
	for _, e := range readCgroups(fsys) {
		switch {
		case e.unified:
			for _, dir := range cgroupDirs(cgroupRoot, e.path) {
				file := path.Join(dir, "cpu.max")
				if q, p, ok := readCPUMax(fsys, file); ok {
					l.offer(q*1000/p, file)
				}
			}
		case e.has("cpu"):
			for _, mount := range v1Mounts(e, "cpu") {
				for _, dir := range cgroupDirs(mount, e.path) {
					file := path.Join(dir, "cpu.cfs_quota_us")
					q, okQ := readInt(fsys, file)
					p, okP := readInt(fsys, path.Join(dir, "cpu.cfs_period_us"))
					if okQ && okP && q > 0 && p > 0 {
						l.offer(q*1000/p, file)
					}
				}
			}
		}
	}
	return l, l.source != ""
}

// readCPUMax parses a v2 cpu.max file, "QUOTA PERIOD" or "max PERIOD".
// ok is false when the file is absent, malformed or sets no quota.
func readCPUMax(fsys fs.FS, name string) (quota, period int64, ok bool) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 || f[0] == "max" {
		return 0, 0, false
	}
	quota, err = strconv.ParseInt(f[0], 10, 64)
	if err != nil || quota <= 0 {
		return 0, 0, false
	}
	period = 100000
	if len(f) > 1 {
		period, err = strconv.ParseInt(f[1], 10, 64)
		if err != nil || period <= 0 {
			return 0, 0, false
		}
	}
	return quota, period, true
}

// v1Unlimited is the smallest memory.limit_in_bytes treated as "no
// limit": the kernel reports an unset limit as the largest page-aligned
// int64.
const v1Unlimited = 1 << 62

// cgroupMemoryLimit returns the tightest memory limit, in bytes, set by a
// v2 memory.max or a v1 memory.limit_in_bytes on the process's cgroup or
// any of its ancestors. ok is false when no limit is set.
func cgroupMemoryLimit(fsys fs.FS) (l limit, ok bool) {
	for _, e := range readCgroups(fsys) {
		switch {
		case e.unified:
			for _, dir := range cgroupDirs(cgroupRoot, e.path) {
				file := path.Join(dir, "memory.max")
				if n, ok := readInt(fsys, file); ok && n > 0 {
					l.offer(n, file)
				}
			}
		case e.has("memory"):
			for _, mount := range v1Mounts(e, "memory") {
				for _, dir := range cgroupDirs(mount, e.path) {
					file := path.Join(dir, "memory.limit_in_bytes")
					if n, ok := readInt(fsys, file); ok && n > 0 && n < v1Unlimited {
						l.offer(n, file)
					}
				}
			}
		}
	}
	return l, l.source != ""
}
