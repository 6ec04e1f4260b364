package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestMain lets this test binary be a task's init process (TaskInit),
// as the agora binary is.
func TestMain(m *testing.M) {
	TaskInit()
	os.Exit(m.Run())
}

func TestInitArgsRoundTrip(t *testing.T) {
	cases := []initArgs{
		{path: "/bin/sh", argv: []string{"sh", "-c", "echo -k -- x"}},
		{cred: &syscall.Credential{Uid: 2_000_000_001, Gid: 2_000_000_002}, keep: []string{"/tmp/a b", "/var/x"}, path: "./run", argv: []string{"run", "--", "-k"}},
		{cred: &syscall.Credential{Uid: 1001, Gid: 1001, Groups: []uint32{27, 100}}, path: "/bin/true", argv: []string{"true"}},
	}
	for _, c := range cases {
		args := c.encode()
		if args[0] != TaskInitName {
			t.Fatalf("argv[0] %q", args[0])
		}
		got, err := decodeInitArgs(args[1:])
		if err != nil {
			t.Fatal(err)
		}
		if (got.cred == nil) != (c.cred == nil) || (c.cred != nil && (got.cred.Uid != c.cred.Uid || got.cred.Gid != c.cred.Gid || fmt.Sprint(got.cred.Groups) != fmt.Sprint(c.cred.Groups))) ||
			strings.Join(got.keep, "|") != strings.Join(c.keep, "|") || got.path != c.path || strings.Join(got.argv, "|") != strings.Join(c.argv, "|") {
			t.Errorf("round trip of %+v: %+v", c, got)
		}
	}
	for _, bad := range [][]string{{}, {"x:y", "--", "/bin/true"}, {"1:2:x", "--", "/bin/true"}, {"-", "/bin/true"}, {"-", "-k"}} {
		if _, err := decodeInitArgs(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// TestTaskNamespaces (issue 22): with Options.Namespaces a task has a
// private /tmp (its own directory still at its path, though it lies
// under /tmp), sees only its own processes, runs as its own user, exits
// with its command's status, and leaves nothing behind, a setsid child
// included.
func TestTaskNamespaces(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckNamespaces(exe); err != nil {
		t.Skipf("task namespaces are not available here: %v", err)
	}
	ids := IDRange{First: 2_000_100_100, Count: 4}
	iso := Isolation{IDs: ids, NoNewPrivs: true}
	if err := CheckIsolation(iso, t.TempDir()); err != nil {
		t.Skipf("task isolation is not available here: %v", err)
	}
	r := newTestRunner(t, Options{Isolation: iso, Namespaces: true, BaseEnv: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}})

	// Under /tmp on purpose: the private /tmp must not hide it.
	base, err := os.MkdirTemp("/tmp", "agora-ns-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	reachable(t, filepath.Join(base, "x"))
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(os.TempDir(), "agora-ns-host-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(hostFile, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hostFile) })
	marker := "124." + strconv.Itoa(os.Getpid())

	dir, ckpt := filepath.Join(base, "work"), filepath.Join(base, "ckpt")
	script := strings.Join([]string{
		"id -u",
		"test -e " + hostFile + " && echo SAW-HOST-TMP",
		"echo private > /tmp/own && cat /tmp/own",
		"echo pid=$$",
		"echo procs=$(ls /proc | grep -c '^[0-9]')",
		"echo here > $PWD/file && echo wrote-pwd",
		"echo c > $AGORA_CHECKPOINT_DIR/c && echo wrote-ckpt",
		"setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &",
		"sleep 0.3",
		"exit 3",
	}, "\n")
	out, done := newRecorder(), newDone()
	spec := Spec{JobID: "j", Task: "ns", Command: sh(script), WorkDir: dir, CheckpointDir: ckpt, Grace: time.Second}
	if err := r.Start("ns", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 10*time.Second)
	text := out.text(StreamStdout)
	if res.ExitCode != 3 {
		t.Fatalf("exit %d (%s), want the command's 3\n%s\n%s", res.ExitCode, res.Reason, text, out.text(StreamStderr))
	}
	uid, err := strconv.ParseUint(strings.SplitN(text, "\n", 2)[0], 10, 32)
	if err != nil || uint32(uid) < ids.First || uint32(uid) >= ids.First+ids.Count {
		t.Errorf("ran as %q, not an ID of its own", strings.SplitN(text, "\n", 2)[0])
	}
	for _, want := range []string{"private\n", "wrote-pwd", "wrote-ckpt", "pid=", "procs="} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, text, out.text(StreamStderr))
		}
	}
	if strings.Contains(text, "SAW-HOST-TMP") {
		t.Errorf("the task saw the host's /tmp:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "own")); err == nil {
		t.Error("the task's /tmp file landed in the host's /tmp")
	}
	for _, f := range []string{filepath.Join(dir, "file"), filepath.Join(ckpt, "c")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the task's write to its own directory is not on the host: %v", err)
		}
	}
	// Its shell is a child of the init process, PID 1 (whose threads
	// took the next few IDs); with ls, grep and the sleeps, a handful of
	// processes — never the host's.
	for _, line := range strings.Split(text, "\n") {
		for _, p := range []struct {
			key string
			max int
		}{{"pid=", 64}, {"procs=", 10}} {
			if n, ok := strings.CutPrefix(line, p.key); ok {
				if v, _ := strconv.Atoi(n); v < 2 || v > p.max {
					t.Errorf("%s%s: the task does not live in a PID namespace of its own", p.key, n)
				}
			}
		}
	}
	waitfor.Cond(t, 2*time.Second, "the setsid child to be gone", func() bool { return len(processesOf(uint32(uid))) == 0 })

	// A stop's SIGTERM reaches the command through its init process: it
	// ends long before the grace period would have it killed.
	out, done = newRecorder(), newDone()
	spec = Spec{JobID: "j", Task: "stop", Command: sh("echo up; exec sleep 60"), WorkDir: filepath.Join(base, "stop"), Grace: time.Minute}
	if err := r.Start("stop", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, StreamStdout, "up")
	r.Stop("stop", "test")
	if res := done.wait(t, 20*time.Second); !res.Cancelled {
		t.Errorf("stopped task: %+v", res)
	}
}
