package devices

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// hostFS is the file system /proc and /sys are read from: f, or the real
// root when f is nil.
func hostFS(f fs.FS) fs.FS {
	if f == nil {
		return os.DirFS("/")
	}
	return f
}

// readMeminfo parses proc/meminfo into byte counts keyed by field name
// ("MemTotal", "MemAvailable", …). Values given in kB are converted to
// bytes; unitless values (HugePages_Total) are kept as they are.
func readMeminfo(fsys fs.FS) (map[string]int64, error) {
	data, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			continue
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			n *= 1024
		}
		m[strings.TrimSpace(key)] = n
	}
	if _, ok := m["MemTotal"]; !ok {
		return nil, fmt.Errorf("proc/meminfo: no MemTotal")
	}
	return m, nil
}

// memAvailable is the memory available for new work: MemAvailable, or on
// kernels older than 3.14 its approximation MemFree+Buffers+Cached.
func memAvailable(m map[string]int64) int64 {
	if v, ok := m["MemAvailable"]; ok {
		return v
	}
	return m["MemFree"] + m["Buffers"] + m["Cached"]
}

// cpuModel returns the processor name from proc/cpuinfo: "model name" on
// x86, falling back to the fields other architectures use. It returns ""
// when there is none.
func cpuModel(fsys fs.FS) string {
	data, err := fs.ReadFile(fsys, "proc/cpuinfo")
	if err != nil {
		return ""
	}
	found := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if _, seen := found[key]; !seen && val != "" {
			found[key] = val
		}
	}
	for _, k := range []string{"model name", "Processor", "cpu model", "cpu", "Hardware"} {
		if v := found[k]; v != "" {
			return v
		}
	}
	return ""
}

// cpuTimes is the machine-wide line of proc/stat in clock ticks.
type cpuTimes struct {
	busy  uint64
	total uint64
}

// readCPUTimes reads the aggregate "cpu" line of proc/stat. Busy time is
// user, nice, system, irq, softirq and steal; idle and iowait are idle.
// Guest time is already counted in user and is not added again.
func readCPUTimes(fsys fs.FS) (cpuTimes, error) {
	data, err := fs.ReadFile(fsys, "proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return cpuTimes{}, fmt.Errorf("proc/stat: short cpu line %q", sc.Text())
		}
		var t cpuTimes
		for i, s := range f[1:min(len(f), 9)] {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("proc/stat: bad cpu field %q", s)
			}
			t.total += n
			if i != 3 && i != 4 { // idle, iowait
				t.busy += n
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("proc/stat: no cpu line")
}
