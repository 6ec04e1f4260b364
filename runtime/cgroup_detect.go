package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Detection of a cgroup v2 directory in which task cgroups can be created
// with cpu and memory limits.

// detectCgroups returns a manager for parent, or for the node's own cgroup
// when parent is empty, or nil and why when cgroups cannot be used.
func detectCgroups(parent string) (*cgroupManager, error) {
	m, err := detectV2(parent)
	if err != nil && parent == "" {
		// No usable v2 tree: the v1 hierarchies, where mounted.
		v1, err1 := detectV1("/proc/self/mountinfo", "/proc/self/cgroup")
		if err1 == nil {
			log.Debugw("cgroup v1 limits enabled", "hierarchies", v1.home)
			return &cgroupManager{v1: v1, cpu: v1.home["cpu"] != "", memory: v1.home["memory"] != "", pids: v1.home["pids"] != ""}, nil
		}
		err = fmt.Errorf("%v; v1: %v", err, err1)
	}
	if err != nil {
		log.Debugw("cgroup limits disabled", "err", err)
		return nil, err
	}
	log.Debugw("cgroup limits enabled", "parent", m.parent, "cpu", m.cpu, "memory", m.memory)
	return m, nil
}

// detectV2 is the cgroup v2 manager for parent, or the node's own cgroup.
func detectV2(parent string) (*cgroupManager, error) {
	if parent == "" {
		p, err := ownCgroup("/proc/self/mountinfo", "/proc/self/cgroup")
		if err != nil {
			return nil, err
		}
		parent = p
	}
	return probeCgroup(parent)
}

// ownCgroup returns the directory of the process's cgroup v2, from the "0::"
// line of the cgroup file and the cgroup2 mounts listed in mountinfo.
func ownCgroup(mountinfo, cgroupFile string) (string, error) {
	data, err := os.ReadFile(cgroupFile)
	if err != nil {
		return "", fmt.Errorf("runtime: read own cgroup: %w", err)
	}
	var cgPath string
	found := false
	for line := range strings.Lines(string(data)) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			cgPath, found = p, true
			break
		}
	}
	if !found {
		return "", errors.New("runtime: process is not in a cgroup v2 hierarchy")
	}

	var found2 string
	err = scanMounts(mountinfo, "cgroup2", func(root, mountPoint string, _ []string) bool {
		rel, ok := relCgroupPath(root, cgPath)
		if !ok {
			return true
		}
		dir := filepath.Join(mountPoint, rel)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			found2 = dir
			return false
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if found2 != "" {
		return found2, nil
	}
	return "", fmt.Errorf("runtime: no cgroup2 mount holds cgroup %q", cgPath)
}

// scanMounts calls fn with the root, the mount point and the super
// options of each mount of type fstype in mountinfo, until fn returns
// false.
func scanMounts(mountinfo, fstype string, fn func(root, mountPoint string, superOpts []string) bool) error {
	f, err := os.Open(mountinfo)
	if err != nil {
		return fmt.Errorf("runtime: read mounts: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(postFields) < 1 || postFields[0] != fstype {
			continue
		}
		var opts []string
		if len(postFields) >= 3 {
			opts = strings.Split(postFields[2], ",")
		}
		if !fn(unescapeMount(fields[3]), unescapeMount(fields[4]), opts) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("runtime: read mounts: %w", err)
	}
	return nil
}

// relCgroupPath returns cgPath relative to a mount whose root in the
// hierarchy is root.
func relCgroupPath(root, cgPath string) (string, bool) {
	if root == "/" {
		return cgPath, true
	}
	if cgPath == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(cgPath, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escaping (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// probeCgroup checks that dir can hold task cgroups with cpu or memory
// limits, enabling the controllers for its children if needed.
func probeCgroup(dir string) (*cgroupManager, error) {
	available, err := readWords(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("runtime: cgroup %s: %w", dir, err)
	}
	subtree := filepath.Join(dir, "cgroup.subtree_control")
	enabled, err := readWords(subtree)
	if err != nil {
		return nil, fmt.Errorf("runtime: cgroup %s: %w", dir, err)
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if slices.Contains(available, c) && !slices.Contains(enabled, c) {
			// Fails with EBUSY when dir has processes of its own (the
			// "no internal processes" rule); then the controller stays off.
			if err := writeCgroupFile(subtree, "+"+c); err != nil {
				log.Debugw("cannot enable cgroup controller", "dir", dir, "controller", c, "err", err)
			}
		}
	}
	if enabled, err = readWords(subtree); err != nil {
		return nil, fmt.Errorf("runtime: cgroup %s: %w", dir, err)
	}
	m := &cgroupManager{
		parent: dir,
		cpu:    slices.Contains(enabled, "cpu"),
		memory: slices.Contains(enabled, "memory"),
		pids:   slices.Contains(enabled, "pids"),
	}
	if !m.cpu && !m.memory {
		return nil, fmt.Errorf("runtime: cgroup %s: cpu and memory controllers not delegated", dir)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return nil, fmt.Errorf("runtime: cgroup %s not writable: %w", dir, err)
	}
	return m, nil
}

func readWords(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}
