package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/runtime/containertest"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// testDevicePaths are two character devices for a node to declare as
// NPU units: made with mknod (as /dev/null's twin, 1:3) when root, so a
// container can be given them by a path no image has, else /dev/null and
// /dev/zero. They are removed when the test ends.
func testDevicePaths(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		return []string{"/dev/null", "/dev/zero"}
	}
	var paths []string
	for i := range 2 {
		p := fmt.Sprintf("/dev/agora-e2e-npu%d-%d", i, os.Getpid())
		_ = os.Remove(p)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("mknod %s: %v (the host does not let root make device nodes)", p, err)
		}
		t.Cleanup(func() { _ = os.Remove(p) })
		if err := os.Chmod(p, 0o666); err != nil { // mknod's mode went through the umask
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// deviceLine is what each task of the devices test prints.
var deviceLine = regexp.MustCompile(`(?m)^cuda=(\S*) devices=(\S*) npu=(\S*) seen=(\S*)$`)

// TestE2EDeclaredDevices (issue 45, done-when 6): a node declares two
// GPUs and two NPU units with device paths. Two tasks, each holding one
// GPU and one NPU unit, run at once (each waits for the other at a
// barrier): their CUDA_VISIBLE_DEVICES are their assigned, distinct GPU
// indices; AGORA_DEVICES names the unit's path, which the task can open;
// AGORA_NPU_DEVICES is the index of that path in the resources file. With
// an engine, an image task holding a unit sees the same path inside its
// container.
func TestE2EDeclaredDevices(t *testing.T) {
	paths := testDevicePaths(t)
	res := writeFile(t, "r.yaml", fmt.Sprintf(`cpu: 4
memory: 4GiB
gpus:
  - {model: T4, memory: 16GiB}
  - {model: T4, memory: 16GiB}
devices:
  - {kind: npu, model: hailo8, count: 2, paths: [%s, %s]}
`, paths[0], paths[1]))
	n := startNode(t, t.TempDir(), "--resources", res)

	// The barrier is a directory every task user may write to.
	barrier, err := os.MkdirTemp("", "agora-e2e-barrier-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(barrier) })
	if err := os.Chmod(barrier, 0o1777); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf(`touch %[1]s/$$; i=0; while [ "$(ls %[1]s | wc -l)" -lt 2 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; `+
		`seen=no; [ -c "$AGORA_DEVICES" ] && seen=yes; echo "cuda=$CUDA_VISIBLE_DEVICES devices=$AGORA_DEVICES npu=$AGORA_NPU_DEVICES seen=$seen"; [ "$(ls %[1]s | wc -l)" -ge 2 ]`, barrier)
	job := writeFile(t, "devices.yaml", fmt.Sprintf(`
name: devices
tasks:
  - name: a
    command: %[1]q
    resources: {gpu: 1, devices: [{kind: npu, count: 1}]}
  - name: b
    command: %[1]q
    resources: {gpu: 1, devices: [{kind: npu, model: hailo8, count: 1}]}
`, cmd))
	out, errs, code := agora(t, "submit", "--api", n.api, "--json", job)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := jobID(out)
	waitfor.Every(t, 90*time.Second, apiPoll, "the devices job to end", func() bool { return terminal(e2eStatus(t, n.api, id).State) })
	st := e2eStatus(t, n.api, id)
	if st.State != "succeeded" {
		logs, errs, _ := agora(t, "logs", "--api", n.api, id)
		t.Fatalf("job %s: %s (%+v)\n%s%s", st.State, st.Reason, st.Tasks, logs, errs)
	}
	var cudas []string
	for _, task := range []string{"a", "b"} {
		logs, errs, code := agora(t, "logs", "--api", n.api, "--task", task, id)
		m := deviceLine.FindStringSubmatch(logs)
		if code != 0 || m == nil {
			t.Fatalf("logs of %s: exit %d: %q %s", task, code, logs, errs)
		}
		cuda, dev, npu, seen := m[1], m[2], m[3], m[4]
		i := slices.Index(paths, dev)
		if i < 0 || npu != fmt.Sprint(i) || seen != "yes" {
			t.Errorf("task %s: AGORA_DEVICES=%q AGORA_NPU_DEVICES=%q (opened: %s); want one of %v and its index", task, dev, npu, seen, paths)
		}
		cudas = append(cudas, cuda)
	}
	if slices.Sort(cudas); !slices.Equal(cudas, []string{"0", "1"}) {
		t.Errorf("two tasks at once got GPUs %v, want 0 and 1", cudas)
	}

	// In an image: the unit's path is passed into the container.
	if os.Geteuid() != 0 {
		return
	}
	rt, err := runtime.DetectContainerRuntime(t.Context(), runtime.ContainerAuto)
	if rt == nil {
		t.Logf("image part skipped: no container engine works here: %v", err)
		return
	}
	ref, _ := containertest.Busybox(t, rt.Path)
	out, errs, code = agora(t, "run", "--api", n.api, "--wait", "--image", ref, "--retries", "0", "--", "sh", "-c",
		`[ -c "$AGORA_DEVICES" ] && echo "inside=$AGORA_DEVICES npu=$AGORA_NPU_DEVICES"`)
	if code == 0 {
		t.Fatalf("an image task that asked for no device was given one: %s", out)
	}
	spec := writeFile(t, "boxed-npu.yaml", fmt.Sprintf(`
name: boxed-npu
tasks:
  - name: t
    image: %s
    command: '[ -c "$AGORA_DEVICES" ] && echo "inside=$AGORA_DEVICES npu=$AGORA_NPU_DEVICES" && echo x > "$AGORA_DEVICES"'
    resources: {devices: [{kind: npu, count: 1}]}
`, ref))
	out, errs, code = agora(t, "submit", "--api", n.api, "--wait", spec)
	boxed := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	logs, lerrs, _ := agora(t, "logs", "--api", n.api, boxed)
	if code != 0 {
		t.Fatalf("image task holding a unit: exit %d: %s %s\nits log: %s%s", code, out, errs, logs, lerrs)
	}
	out = logs
	m := regexp.MustCompile(`inside=(\S+) npu=(\S+)`).FindStringSubmatch(out)
	if m == nil || m[1] != paths[0] || m[2] != "0" {
		t.Fatalf("inside the container: %q, want %s and index 0", out, paths[0])
	}
}
