package devices

import (
	"strings"
	"testing"
	"testing/fstest"
)

// fakeFS builds a host file system from path → contents.
func fakeFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

const meminfo16G = `MemTotal:       16777216 kB
MemFree:         1048576 kB
MemAvailable:    8388608 kB
Buffers:           10000 kB
Cached:          2000000 kB
HugePages_Total:       0
`

func TestCPUCapacity(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		ncpu   int
		milli  int64
		source string
	}{
		{"no cgroup files", map[string]string{"proc/self/cgroup": "0::/\n"}, 8, 8000, "runtime.NumCPU"},
		{"no proc self cgroup", map[string]string{}, 4, 4000, "runtime.NumCPU"},
		{"no proc self cgroup reads root cpu.max", map[string]string{"sys/fs/cgroup/cpu.max": "200000 100000\n"}, 4, 2000, "/sys/fs/cgroup/cpu.max"},
		{"v2 unlimited", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"sys/fs/cgroup/cpu.max": "max 100000\n",
		}, 8, 8000, "runtime.NumCPU"},
		{"v2 quota", map[string]string{
			"proc/self/cgroup":          "0::/a/b\n",
			"sys/fs/cgroup/a/b/cpu.max": "150000 100000\n",
		}, 8, 1500, "/sys/fs/cgroup/a/b/cpu.max"},
		{"v2 quota without period", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"sys/fs/cgroup/cpu.max": "50000\n",
		}, 8, 500, "/sys/fs/cgroup/cpu.max"},
		{"v2 parent is tighter", map[string]string{
			"proc/self/cgroup":          "0::/a/b\n",
			"sys/fs/cgroup/a/cpu.max":   "50000 100000\n",
			"sys/fs/cgroup/a/b/cpu.max": "200000 100000\n",
		}, 8, 500, "/sys/fs/cgroup/a/cpu.max"},
		{"v2 quota above NumCPU", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"sys/fs/cgroup/cpu.max": "800000 100000\n",
		}, 4, 4000, "runtime.NumCPU"},
		{"v2 container sees host path, own cgroup mounted", map[string]string{
			"proc/self/cgroup":      "0::/system.slice/docker-abc.scope\n",
			"sys/fs/cgroup/cpu.max": "250000 100000\n",
		}, 16, 2500, "/sys/fs/cgroup/cpu.max"},
		{"v2 malformed", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"sys/fs/cgroup/cpu.max": "lots\n",
		}, 2, 2000, "runtime.NumCPU"},
		{"v2 zero period", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"sys/fs/cgroup/cpu.max": "1000 0\n",
		}, 2, 2000, "runtime.NumCPU"},
		{"v1 joined mount", map[string]string{
			"proc/self/cgroup":                            "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "200000\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
		}, 8, 2000, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"},
		{"v1 named mount", map[string]string{
			"proc/self/cgroup":                        "5:cpuacct,cpu:/job\n",
			"sys/fs/cgroup/cpu/job/cpu.cfs_quota_us":  "25000\n",
			"sys/fs/cgroup/cpu/job/cpu.cfs_period_us": "50000\n",
		}, 8, 500, "/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us"},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":                    "1:cpu:/\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
		}, 2, 2000, "runtime.NumCPU"},
		{"v1 quota without period", map[string]string{
			"proc/self/cgroup":                   "1:cpu:/\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "100000\n",
		}, 2, 2000, "runtime.NumCPU"},
		{"hybrid, v1 limits", map[string]string{
			"proc/self/cgroup":                    "0::/\n1:cpu:/\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "100000\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
		}, 2, 1000, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"},
		{"fraction rounds down", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"sys/fs/cgroup/cpu.max": "33333 100000\n",
		}, 2, 333, "/sys/fs/cgroup/cpu.max"},
	}
	for _, tt := range tests {
		milli, source := cpuCapacity(fakeFS(tt.files), tt.ncpu)
		if milli != tt.milli || source != tt.source {
			t.Errorf("%s: got %d from %s, want %d from %s", tt.name, milli, source, tt.milli, tt.source)
		}
	}
}

func TestMemoryCapacity(t *testing.T) {
	const total = 16 << 30
	tests := []struct {
		name   string
		files  map[string]string
		bytes  int64
		total  int64
		source string
		err    string
	}{
		{"meminfo only", map[string]string{"proc/meminfo": meminfo16G, "proc/self/cgroup": "0::/\n"}, total, total, "/proc/meminfo", ""},
		{"v2 limit", map[string]string{
			"proc/meminfo":                 "MemTotal: 16777216 kB\n",
			"proc/self/cgroup":             "0::/job\n",
			"sys/fs/cgroup/job/memory.max": "4294967296\n",
		}, 4 << 30, total, "/sys/fs/cgroup/job/memory.max", ""},
		{"v2 max", map[string]string{
			"proc/meminfo":             meminfo16G,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, total, total, "/proc/meminfo", ""},
		{"v2 limit above MemTotal", map[string]string{
			"proc/meminfo":             meminfo16G,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "68719476736\n",
		}, total, total, "/proc/meminfo", ""},
		{"v2 parent limit", map[string]string{
			"proc/meminfo":                  meminfo16G,
			"proc/self/cgroup":              "0::/a/b\n",
			"sys/fs/cgroup/a/memory.max":    "1073741824\n",
			"sys/fs/cgroup/a/b/memory.max":  "max\n",
			"sys/fs/cgroup/a/b/memory.high": "1024\n",
		}, 1 << 30, total, "/sys/fs/cgroup/a/memory.max", ""},
		{"v1 unlimited", map[string]string{
			"proc/meminfo":     meminfo16G,
			"proc/self/cgroup": "4:memory:/process_api/x\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               "9223372036854771712\n",
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "9223372036854771712\n",
		}, total, total, "/proc/meminfo", ""},
		{"v1 limit", map[string]string{
			"proc/meminfo":     meminfo16G,
			"proc/self/cgroup": "4:memory:/process_api/x\n",
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "2147483648\n",
		}, 2 << 30, total, "/sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes", ""},
		{"no meminfo but a limit", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30, 0, "/sys/fs/cgroup/memory.max", ""},
		{"no meminfo", map[string]string{"proc/self/cgroup": "0::/\n"}, 0, 0, "", "memory: open proc/meminfo: file does not exist"},
		{"meminfo without MemTotal", map[string]string{"proc/meminfo": "MemFree: 1 kB\n"}, 0, 0, "", "memory: proc/meminfo: no MemTotal"},
	}
	for _, tt := range tests {
		b, tot, src, err := memoryCapacity(fakeFS(tt.files))
		if b != tt.bytes || tot != tt.total || src != tt.source {
			t.Errorf("%s: got %d (total %d) from %q, want %d (total %d) from %q", tt.name, b, tot, src, tt.bytes, tt.total, tt.source)
		}
		if got := errString(err); got != tt.err {
			t.Errorf("%s: error %q, want %q", tt.name, got, tt.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestReadMeminfo(t *testing.T) {
	m, err := readMeminfo(fakeFS(map[string]string{"proc/meminfo": meminfo16G + "garbage line\nBad: x kB\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if m["MemTotal"] != 16<<30 || m["MemAvailable"] != 8<<30 || m["HugePages_Total"] != 0 {
		t.Errorf("parsed %v", m)
	}
	if _, ok := m["Bad"]; ok {
		t.Error("kept an unparsable value")
	}
	if got := memAvailable(m); got != 8<<30 {
		t.Errorf("memAvailable = %d", got)
	}
	delete(m, "MemAvailable")
	if got, want := memAvailable(m), int64((1048576+10000+2000000)*1024); got != want {
		t.Errorf("memAvailable without MemAvailable = %d, want %d", got, want)
	}
}

func TestCPUModel(t *testing.T) {
	tests := []struct {
		cpuinfo string
		want    string
	}{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n", "AMD EPYC 7B13"},
		{"Processor\t: ARMv7 Processor rev 4 (v7l)\nHardware\t: BCM2835\n", "ARMv7 Processor rev 4 (v7l)"},
		{"processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\nHardware\t: Neoverse\n", "Neoverse"},
		{"processor\t: 0\ncpu\t\t: POWER9 (architected)\n", "POWER9 (architected)"},
		{"processor\t: 0\n", ""},
	}
	for _, tt := range tests {
		if got := cpuModel(fakeFS(map[string]string{"proc/cpuinfo": tt.cpuinfo})); got != tt.want {
			t.Errorf("cpuModel(%q) = %q, want %q", tt.cpuinfo, got, tt.want)
		}
	}
	if got := cpuModel(fakeFS(nil)); got != "" {
		t.Errorf("cpuModel without cpuinfo = %q", got)
	}
}

func TestCgroupDirs(t *testing.T) {
	got := strings.Join(cgroupDirs("sys/fs/cgroup", "/a/b"), " ")
	if want := "sys/fs/cgroup/a/b sys/fs/cgroup/a sys/fs/cgroup"; got != want {
		t.Errorf("cgroupDirs = %s, want %s", got, want)
	}
	// A path outside the cgroup namespace's root never escapes the mount.
	got = strings.Join(cgroupDirs("sys/fs/cgroup", "/../../x"), " ")
	if want := "sys/fs/cgroup/x sys/fs/cgroup"; got != want {
		t.Errorf("cgroupDirs escaping = %s, want %s", got, want)
	}
}
