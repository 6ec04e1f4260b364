package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/runtime/containertest"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// containerRunner is a Runner with the host's container engine, as a
// root node has it: task user IDs of its own, cgroups, a pids bound of
// 20. It skips the test saying why the host cannot run containers.
func containerRunner(t *testing.T) (*Runner, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("container tests run as root (CI does)")
	}
	rt, err := DetectContainerRuntime(context.Background(), ContainerAuto)
	if rt == nil {
		t.Skipf("no container engine works here (make testdeps installs podman and runc as root): %v", err)
	}
	t.Logf("engine: %s, run args %v", rt, append(rt.Global, rt.RunArgs...))
	r := NewRunner(Options{PidsMax: 20, DrainTimeout: 500 * time.Millisecond, Container: rt,
		Isolation: Isolation{IDs: IDRange{First: 3_900_000, Count: 64}}})
	t.Cleanup(func() {
		for _, id := range r.Running() {
			r.Kill(id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Wait(ctx); err != nil {
			t.Errorf("runner did not drain: %v", err)
		}
	})
	_, id := containertest.Busybox(t, rt.Path)
	return r, id
}

func containerSpec(t *testing.T, id string, cmd []string) Spec {
	s := testSpec(t, cmd)
	s.Container = &Container{Image: id, ID: id}
	return s
}

// TestContainerRunsLikeAProcess: an image task sees its work directory
// at the host's path, as its own user, with Agora's variables and the
// job's environment; its output, exit code and files come back as a
// process task's do.
func TestContainerRunsLikeAProcess(t *testing.T) {
	r, id := containerRunner(t)
	spec := containerSpec(t, id, sh(`echo "job=$AGORA_JOB_ID task=$AGORA_TASK greeting=$GREETING pwd=$(pwd)"; id -u; echo made > out.txt; echo oops >&2; test -x /bin/busybox && ! test -e /usr/bin/apt-get; exit 7`))
	spec.Env = map[string]string{"GREETING": "hello world"}
	out := newRecorder()
	done := newDone()
	if err := r.Start("ct-basic", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 60*time.Second)
	stdout := out.text(StreamStdout)
	if res.ExitCode != 7 {
		t.Fatalf("exit code %d (%s), want 7\nstdout: %s\nstderr: %s", res.ExitCode, res.Reason, stdout, out.text(StreamStderr))
	}
	want := "job=job-1 task=train greeting=hello world pwd=" + spec.WorkDir
	if !strings.Contains(stdout, want) {
		t.Fatalf("stdout %q lacks %q", stdout, want)
	}
	if uid := firstLineInt(t, strings.SplitN(stdout, "\n", 2)[1]); uid < 3_900_000 || uid >= 3_900_064 {
		t.Fatalf("ran as user %d, not one of the task IDs", uid)
	}
	if !strings.Contains(out.text(StreamStderr), "oops") {
		t.Fatalf("stderr %q lacks the task's own", out.text(StreamStderr))
	}
	if b, err := os.ReadFile(filepath.Join(spec.WorkDir, "out.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the file the task wrote: %q, %v", b, err)
	}
}

// TestContainerEnvDoesNotSteerTheEngine: the engine runs as the node,
// in the node's environment; a task's variables reach the container and
// nothing else. A CONTAINERS_CONF in the job's environment that would
// inject a variable into every container (and could mount the host's
// root) is only a variable inside, and a value with a line break is
// refused rather than split into two variables.
func TestContainerEnvDoesNotSteerTheEngine(t *testing.T) {
	r, id := containerRunner(t)
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\nenv = [\"INJECTED=by-the-task\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := containerSpec(t, id, sh(`echo "injected=$INJECTED conf=$CONTAINERS_CONF"`))
	spec.Env = map[string]string{"CONTAINERS_CONF": conf, "LD_PRELOAD": "/nonexistent/agora-test.so"}
	out := newRecorder()
	done := newDone()
	if err := r.Start("ct-env", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 60*time.Second)
	stdout, stderr := out.text(StreamStdout), out.text(StreamStderr)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d (%s)\n%s%s", res.ExitCode, res.Reason, stdout, stderr)
	}
	if want := "injected= conf=" + conf; !strings.Contains(stdout, want) {
		t.Fatalf("stdout %q, want %q: the task's CONTAINERS_CONF steered the engine", stdout, want)
	}
	if strings.Contains(stderr, "agora-test.so") {
		t.Fatalf("the engine ran with the task's LD_PRELOAD: %s", stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "agora-env-*")); len(left) > 0 {
		t.Errorf("environment files left behind: %v", left)
	}

	spec = containerSpec(t, id, sh(`echo "$A"`))
	spec.Env = map[string]string{"A": "x\nLD_PRELOAD=/evil.so"}
	done = newDone()
	if err := r.Start("ct-env-nl", spec, newRecorder(), done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 60*time.Second); res.ExitCode == 0 || !strings.Contains(res.Reason, "line break") {
		t.Fatalf("a value with a line break: exit %d (%s), want a refusal naming it", res.ExitCode, res.Reason)
	}
}

// TestContainerMemoryLimitHolds (issue 45): the memory limit holds inside
// a container, with a reason naming it.
func TestContainerMemoryLimitHolds(t *testing.T) {
	r, id := containerRunner(t)
	spec := containerSpec(t, id, sh("x=$(yes | head -c 209715200); echo survived"))
	spec.Memory = 64 << 20
	out := newRecorder()
	done := newDone()
	if err := r.Start("ct-mem", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 60*time.Second)
	if res.ExitCode == 0 || strings.Contains(out.text(StreamStdout), "survived") || !strings.Contains(res.Reason, "memory limit of 64 MiB") {
		t.Fatalf("a container over its memory limit: %+v\n%s", res, out.text(StreamStderr))
	}
	t.Logf("%s", res.Reason)
}

// TestContainerPidsLimitHolds: the node's pids bound holds inside a
// container: its 40th background sleep cannot be forked.
func TestContainerPidsLimitHolds(t *testing.T) {
	r, id := containerRunner(t)
	spec := containerSpec(t, id, sh("for i in $(seq 1 40); do sleep 2 & done; wait; echo all-forked"))
	out := newRecorder()
	done := newDone()
	if err := r.Start("ct-pids", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 60*time.Second)
	if strings.Contains(out.text(StreamStdout), "all-forked") || res.ExitCode == 0 {
		t.Fatalf("40 processes forked under a bound of 20: %+v\n%s", res, out.text(StreamStderr))
	}
	t.Logf("%+v: %s", res, strings.TrimSpace(out.text(StreamStderr)))
}

// TestContainerStopEndsIt: cancelling an image task ends its container
// (none is left behind), and the result says cancelled.
func TestContainerStopEndsIt(t *testing.T) {
	r, id := containerRunner(t)
	spec := containerSpec(t, id, sh("echo started; sleep 300"))
	spec.Grace = 2 * time.Second
	out := newRecorder()
	done := newDone()
	if err := r.Start("ct-stop", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, StreamStdout, "started")
	r.Stop("ct-stop", "by the test")
	res := done.wait(t, 60*time.Second)
	if !res.Cancelled || !strings.Contains(res.Reason, "by the test") {
		t.Fatalf("a stopped container: %+v", res)
	}
	rt := r.ContainerRuntime()
	if _, err := rt.output(context.Background(), "container", "inspect", containerName("ct-stop")); err == nil {
		t.Fatalf("container %s is still there after its task ended", containerName("ct-stop"))
	}
}

// TestContainerPinnedImage (issue 45): a tag that names another image
// than the pinned ID is refused, naming both; an ID the node lacks is
// refused naming it.
func TestContainerPinnedImage(t *testing.T) {
	r, id := containerRunner(t)
	rt := r.ContainerRuntime()
	ref2, id2 := containertest.Busybox(t, rt.Path) // another import: another ID
	if id2 == id {
		t.Fatalf("two imports gave one ID %s", id)
	}
	spec := containerSpec(t, id, sh("echo ran"))
	spec.Container.Image = ref2
	done := newDone()
	if err := r.Start("ct-pin", spec, nil, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 60*time.Second)
	if res.ExitCode == 0 || !strings.Contains(res.Reason, id) || !strings.Contains(res.Reason, id2) {
		t.Fatalf("a retagged image ran or was refused without naming both IDs: %+v", res)
	}
	missing := "sha256:" + strings.Repeat("ab", 32)
	spec = containerSpec(t, missing, sh("echo ran"))
	if err := r.Start("ct-missing", spec, nil, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 60*time.Second); res.ExitCode == 0 || !strings.Contains(res.Reason, "not on this node") {
		t.Fatalf("an image the node lacks: %+v", res)
	}
	if err := rt.checkPinned(&Container{Image: ref2, ID: id2}); err != nil {
		t.Fatalf("the right pin refused: %v", err)
	}
	if err := rt.checkPinned(&Container{Image: ref2, ID: id}); !errors.Is(err, ErrImageMismatch) {
		t.Fatalf("the wrong pin: %v", err)
	}
}

// TestNoEngineRefusesImages: a Runner without an engine fails an image
// task at start, naming why.
func TestNoEngineRefusesImages(t *testing.T) {
	r := newTestRunner(t, Options{})
	spec := testSpec(t, sh("true"))
	spec.Container = &Container{Image: "x", ID: "sha256:" + strings.Repeat("0", 64)}
	done := newDone()
	if err := r.Start("noengine", spec, nil, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 10*time.Second); !strings.Contains(res.Reason, "no container runtime") {
		t.Fatalf("%+v", res)
	}
}

// TestCheckGPUDevices: the start-up check finds the control device and
// each GPU's device file as character devices, and names what is not.
func TestCheckGPUDevices(t *testing.T) {
	dev := t.TempDir()
	for _, n := range []string{"nvidiactl", "nvidia0", "nvidia1"} {
		if err := os.Symlink("/dev/null", filepath.Join(dev, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dev, "nvidia2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		gpus []int
		want string
	}{
		{[]int{0, 1}, ""},
		{[]int{0, 2}, "nvidia2 is not a character device"},
		{[]int{3}, "nvidia3: stat"},
	}
	for _, tc := range tests {
		err := CheckGPUDevices(dev, tc.gpus)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckGPUDevices(%v) = %v, want %q", tc.gpus, err, tc.want)
		}
	}
	if err := CheckGPUDevices(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "nvidiactl") {
		t.Errorf("without the control device: %v", err)
	}
}

// TestContainerAdoptedKill: an image task re-attached after its node
// died is container-aware: killing it removes its container, which
// killing the engine's client alone would leave running.
func TestContainerAdoptedKill(t *testing.T) {
	r, id := containerRunner(t)
	spec := containerSpec(t, id, sh("sleep 60"))
	const name = "ct-adopted"
	envFile, err := writeEnvFile(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(envFile)
	args := r.opts.Container.containerArgs(name, spec, spec.WorkDir, envFile, "", 20)
	exit := filepath.Join(spec.WorkDir, ".agora-exit-1")
	cmd := exec.Command("/bin/sh", append([]string{"-c", exitWrapper, "agora-task", exit}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	engine := r.opts.Container.Path
	running := func() bool {
		out, err := exec.Command(engine, "container", "inspect", "--format", "{{.State.Running}}", containerName(name)).Output()
		return err == nil && strings.TrimSpace(string(out)) == "true"
	}
	waitfor.Cond(t, 30*time.Second, "the container to run", running)
	done := newDone()
	if err := r.Adopt(name, Orphan{PID: cmd.Process.Pid, Started: time.Now(), ExitFile: exit, Container: true}, done.fn); err != nil {
		t.Fatal(err)
	}
	r.Kill(name)
	if res := done.wait(t, 30*time.Second); !res.Cancelled {
		t.Fatalf("result %+v, want cancelled", res)
	}
	if exec.Command(engine, "container", "exists", containerName(name)).Run() == nil {
		_ = exec.Command(engine, "rm", "--force", containerName(name)).Run()
		t.Fatal("the container outlived its killed, adopted task")
	}
}

// TestContainerCDIGPU: where the host's CDI specs name a node's GPUs, an
// image task's GPUs pass in as CDI devices, and the engine applies the
// spec's edits (here a device file and a variable from a stand-in kind,
// written to /etc/cdi for the test and removed after).
func TestContainerCDIGPU(t *testing.T) {
	r, id := containerRunner(t)
	kind := fmt.Sprintf("agora.test/gpu%d", os.Getpid())
	dir := CDIDirs[0]
	made := false
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		made = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cannot write CDI specs here: %v", err)
	}
	file := filepath.Join(dir, fmt.Sprintf("agora-test-%d.yaml", os.Getpid()))
	spec := fmt.Sprintf(`cdiVersion: "0.5.0"
kind: %s
devices:
  - name: GPU-agora-test
    containerEdits:
      env: ["AGORA_CDI_PROBE=gpu-agora-test"]
      deviceNodes:
        - path: /dev/agora-cdi-test
          hostPath: /dev/null
`, kind)
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Skipf("cannot write CDI specs here: %v", err)
	}
	t.Cleanup(func() {
		os.Remove(file)
		if made {
			os.Remove(dir)
		}
	})
	names, _ := FindCDIDevices([]string{dir}, kind)
	if !names["GPU-agora-test"] {
		t.Fatalf("FindCDIDevices did not find the test device: %v", names)
	}
	rt := *r.opts.Container
	rt.CDIKind, rt.CDIGPUs = kind, map[int]string{0: "GPU-agora-test"}
	r.opts.Container = &rt
	ts := containerSpec(t, id, sh(`echo "probe=$AGORA_CDI_PROBE cuda=$CUDA_VISIBLE_DEVICES"; test -c /dev/agora-cdi-test`))
	ts.GPUs = []int{0}
	out := newRecorder()
	done := newDone()
	if err := r.Start("ct-cdi", ts, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 60*time.Second)
	if res.ExitCode != 0 || !strings.Contains(out.text(StreamStdout), "probe=gpu-agora-test cuda=0") {
		t.Fatalf("exit %d (%s): stdout %q stderr %q", res.ExitCode, res.Reason, out.text(StreamStdout), out.text(StreamStderr))
	}
}
