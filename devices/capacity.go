package devices

import (
	"fmt"
	"io/fs"
)

// cpuCapacity is the CPU the node may use, in millicores: ncpu logical
// CPUs, lowered by a cgroup CPU quota when that is tighter. source names
// where the figure came from.
func cpuCapacity(fsys fs.FS, ncpu int) (milli int64, source string) {
	milli, source = int64(max(ncpu, 1))*1000, "runtime.NumCPU"
	if l, ok := cgroupCPULimit(fsys); ok && l.value < milli {
		return l.value, l.source
	}
	return milli, source
}

// memoryCapacity is the memory the node may use, in bytes: MemTotal of
// proc/meminfo, lowered by a cgroup memory limit when that is tighter.
// total is MemTotal itself (0 when unreadable). When proc/meminfo cannot
// be read, a cgroup limit alone still gives an answer.
func memoryCapacity(fsys fs.FS) (bytes, total int64, source string, err error) {
	l, limited := cgroupMemoryLimit(fsys)
	m, err := readMeminfo(fsys)
	if err != nil {
		if limited {
			return l.value, 0, l.source, nil
		}
		return 0, 0, "", fmt.Errorf("memory: %w", err)
	}
	total = m["MemTotal"]
	if limited && l.value < total {
		return l.value, total, l.source, nil
	}
	return total, total, "/proc/meminfo", nil
}
