package runtime

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// fakeCgroup creates a directory that looks like a cgroup v2 directory with
// the given available and child-enabled controllers.
func fakeCgroup(t *testing.T, controllers, subtree string) string {
	t.Helper()
	dir := t.TempDir()
	for file, content := range map[string]string{
		"cgroup.controllers":     controllers + "\n",
		"cgroup.subtree_control": subtree + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func TestOwnCgroup(t *testing.T) {
	tmp := t.TempDir()
	mountPoint := filepath.Join(tmp, "cg root") // a space exercises unescaping
	if err := os.MkdirAll(filepath.Join(mountPoint, "agora.service"), 0o755); err != nil {
		t.Fatal(err)
	}
	escaped := strings.ReplaceAll(mountPoint, " ", `\040`)
	mountinfo := filepath.Join(tmp, "mountinfo")
	if err := os.WriteFile(mountinfo, []byte(
		"22 1 0:21 / /proc rw,nosuid - proc proc rw\n"+
			"30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"+
			"31 25 0:27 /system.slice "+escaped+" rw,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n",
	), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(content string) string {
		p := filepath.Join(tmp, "cgroup")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	got, err := ownCgroup(mountinfo, write("4:memory:/x\n0::/system.slice/agora.service\n"))
	if want := filepath.Join(mountPoint, "agora.service"); err != nil || got != want {
		t.Errorf("ownCgroup = %q, %v; want %q", got, err, want)
	}
	if _, err := ownCgroup(mountinfo, write("4:memory:/x\n")); err == nil {
		t.Error("cgroup v1 only: no error")
	}
	if _, err := ownCgroup(mountinfo, write("0::/user.slice/x\n")); err == nil {
		t.Error("cgroup outside the mount: no error")
	}
}

func TestProbeCgroup(t *testing.T) {
	m, err := probeCgroup(fakeCgroup(t, "cpuset cpu io memory pids", "cpu memory pids"))
	if err != nil || !m.cpu || !m.memory {
		t.Errorf("fully delegated: %+v, %v", m, err)
	}
	m, err = probeCgroup(fakeCgroup(t, "memory", "memory"))
	if err != nil || m.cpu || !m.memory {
		t.Errorf("memory only: %+v, %v", m, err)
	}
	if m, err := probeCgroup(fakeCgroup(t, "io pids", "")); err == nil {
		t.Errorf("no controllers: %+v accepted", m)
	}
	if m, err := probeCgroup(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("missing dir: %+v accepted", m)
	}
	if m, _ := detectCgroups(fakeCgroup(t, "cpu", "")); m != nil {
		// Enabling fails on a plain file the way it does on a busy cgroup:
		// the write replaces the list with "+cpu", which is not "cpu".
		t.Errorf("undelegated: %+v accepted", m)
	}
}

func TestCgroupHelpers(t *testing.T) {
	for milli, want := range map[int64]string{1000: "100000 100000", 500: "50000 100000", 2500: "250000 100000", 1: "1000 100000"} {
		if got := cpuMax(milli); got != want {
			t.Errorf("cpuMax(%d) = %q, want %q", milli, got, want)
		}
	}
	a, b := cgroupName("job/a:0"), cgroupName("job_a_0")
	if a == b || !strings.HasPrefix(a, "agora-job_a_0-") || strings.ContainsAny(a, "/:") {
		t.Errorf("cgroupName: %q, %q", a, b)
	}
	if n := len(cgroupName(strings.Repeat("x", 1000))); n > 100 {
		t.Errorf("cgroupName too long: %d", n)
	}
}

func TestCgroupLimitsAgainstFakeRoot(t *testing.T) {
	parent := fakeCgroup(t, "cpu memory pids", "cpu memory pids")
	r := newTestRunner(t, Options{CgroupParent: parent, PidsMax: 64})
	if r.cgroups == nil {
		t.Fatal("fake cgroup not detected")
	}
	spec := testSpec(t, sh("exit 0"))
	spec.CPUMilli = 1500
	spec.Memory = 256 << 20
	done := newDone()
	// Starting into a directory that is not a real cgroup fails, so this also
	// checks the fallback that keeps the task running.
	if err := r.Start("limited/1", spec, nil, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 5*time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	dir := filepath.Join(parent, cgroupName("limited/1"))
	if got := readTrim(t, filepath.Join(dir, "cpu.max")); got != "150000 100000" {
		t.Errorf("cpu.max = %q", got)
	}
	if got := readTrim(t, filepath.Join(dir, "memory.max")); got != strconv.Itoa(256<<20) {
		t.Errorf("memory.max = %q", got)
	}
	if got := readTrim(t, filepath.Join(dir, "memory.swap.max")); got != "0" {
		t.Errorf("memory.swap.max = %q", got)
	}
	if got := readTrim(t, filepath.Join(dir, "pids.max")); got != "64" {
		t.Errorf("pids.max = %q", got)
	}
	if got := readTrim(t, filepath.Join(dir, "cgroup.procs")); got != strconv.Itoa(res.Pid) {
		t.Errorf("cgroup.procs = %q, want pid %d", got, res.Pid)
	}
}

func TestCgroupWithoutLimitsOrControllers(t *testing.T) {
	// Only memory is delegated: cpu.max must not be written.
	parent := fakeCgroup(t, "memory", "memory")
	r := newTestRunner(t, Options{CgroupParent: parent})
	spec := testSpec(t, sh("exit 0"))
	spec.CPUMilli = 500
	done := newDone()
	if err := r.Start("mem-only", spec, nil, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 5*time.Second); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	dir := filepath.Join(parent, cgroupName("mem-only"))
	for _, f := range []string{"cpu.max", "memory.max"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written without a limit or controller", f)
		}
	}

	// No usable cgroup at all: tasks still run.
	r2 := newTestRunner(t, Options{CgroupParent: filepath.Join(t.TempDir(), "nope")})
	if r2.cgroups != nil {
		t.Fatal("missing cgroup detected as usable")
	}
	done2 := newDone()
	if err := r2.Start("no-cgroup", spec, nil, done2.fn); err != nil {
		t.Fatal(err)
	}
	if res := done2.wait(t, 5*time.Second); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
}

// TestRealCgroupV2 runs a task in a child of the test's own cgroup v2 when
// the machine allows it (root, writable hierarchy), without any controller:
// it checks starting straight into the cgroup, cgroup.kill catching a
// process that left the process group, and removal of the cgroup.
func TestRealCgroupV2(t *testing.T) {
	own, err := ownCgroup("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		t.Skipf("no cgroup v2: %v", err)
	}
	probe := filepath.Join(own, "agora-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Skipf("cgroup %s not writable: %v", own, err)
	}
	_, err = os.Stat(filepath.Join(probe, "cgroup.kill"))
	os.Remove(probe)
	if err != nil {
		t.Skipf("no cgroup.kill: %v", err)
	}
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("setsid not installed")
	}

	r := newTestRunner(t, Options{DrainTimeout: time.Minute})
	r.cgroups = &cgroupManager{parent: own}
	out, done := newRecorder(), newDone()
	script := `cat /proc/self/cgroup; /usr/bin/setsid sh -c 'echo escapee $$; exec sleep 30' & sleep 0.3`
	if err := r.Start("real-cgroup", testSpec(t, sh(script)), out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 10*time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	text := out.text(StreamStdout)
	name := cgroupName("real-cgroup")
	if !strings.Contains(text, "/"+name+"\n") {
		t.Errorf("task not started in its cgroup %s: %q", name, text)
	}
	_, after, ok := strings.Cut(text, "escapee ")
	if !ok {
		t.Fatalf("escapee did not report: %q", text)
	}
	pid := firstLineInt(t, after)
	waitfor.Cond(t, 2*time.Second, "escapee to be killed by cgroup.kill", func() bool { return processGone(pid) })
	if _, err := os.Stat(filepath.Join(own, name)); !os.IsNotExist(err) {
		t.Errorf("task cgroup not removed: %v", err)
	}
}
