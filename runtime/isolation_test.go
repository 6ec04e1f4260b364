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

// isolatedRunner is a Runner whose tasks get IDs of their own and
// no_new_privs, or skips the test saying why the machine cannot.
func isolatedRunner(t *testing.T) (*Runner, IDRange) {
	t.Helper()
	ids := IDRange{First: 2_000_100_000, Count: 8}
	iso := Isolation{IDs: ids, NoNewPrivs: true}
	if err := CheckIsolation(iso, t.TempDir()); err != nil {
		t.Skipf("task isolation is not available here: %v", err)
	}
	return newTestRunner(t, Options{Isolation: iso, BaseEnv: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}}), ids
}

// reachable makes dir's parents traversable by other users, as a node's
// data directory must be for tasks with their own IDs; t.TempDir's are
// its owner's only.
func reachable(t *testing.T, dir string) {
	t.Helper()
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestIsolation (issue 22): a task with its own ID cannot read another
// task's directory or a file of the node's, cannot raise its rights,
// does not see the node's environment, and leaves no process behind
// when it ends, even one that left its process group.
func TestIsolation(t *testing.T) {
	r, ids := isolatedRunner(t)
	base := t.TempDir()
	reachable(t, base)
	secret := filepath.Join(base, "identity.key")
	if err := os.WriteFile(secret, []byte("node key"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGORA_TEST_NODE_SECRET", "leaked")

	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	outA := newRecorder()
	doneA := newDone()
	specA := Spec{JobID: "j", Task: "a", Command: sh("echo mine > own; echo ready; exec sleep 30"), WorkDir: dirA, Grace: time.Second}
	if err := r.Start("a", specA, outA, doneA.fn); err != nil {
		t.Fatal(err)
	}
	outA.waitFor(t, StreamStdout, "ready")

	marker := "123." + strconv.Itoa(os.Getpid())
	script := strings.Join([]string{
		"id -u",
		"cat " + dirA + "/own 2>/dev/null && echo READ-OTHER",
		"cat " + secret + " 2>/dev/null && echo READ-SECRET",
		"echo x > " + dirA + "/planted 2>/dev/null && echo WROTE-OTHER",
		"grep NoNewPrivs /proc/self/status",
		"env | grep AGORA_TEST_NODE_SECRET && echo SAW-ENV",
		"echo home=$HOME",
		"setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &",
		"sleep 0.3", // setsid has left the group by now
		"echo done",
	}, "\n")
	outB := newRecorder()
	doneB := newDone()
	specB := Spec{JobID: "j", Task: "b", Command: sh(script), WorkDir: dirB, Grace: time.Second}
	if err := r.Start("b", specB, outB, doneB.fn); err != nil {
		t.Fatal(err)
	}
	res := doneB.wait(t, 10*time.Second)
	out := outB.text(StreamStdout)
	if res.ExitCode != 0 || !strings.Contains(out, "done") {
		t.Fatalf("task b: %+v\n%s\n%s", res, out, outB.text(StreamStderr))
	}
	uid, err := strconv.ParseUint(strings.SplitN(out, "\n", 2)[0], 10, 32)
	if err != nil || uint32(uid) < ids.First || uint32(uid) >= ids.First+ids.Count {
		t.Errorf("task b ran as %q, not an ID of its own from %d", strings.SplitN(out, "\n", 2)[0], ids.First)
	}
	for _, bad := range []string{"READ-OTHER", "READ-SECRET", "WROTE-OTHER", "SAW-ENV"} {
		if strings.Contains(out, bad) {
			t.Errorf("task b: %s\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Errorf("task b runs without no_new_privs:\n%s", out)
	}
	if !strings.Contains(out, "home="+dirB) {
		t.Errorf("task b's HOME is not its directory:\n%s", out)
	}
	if st, err := os.Stat(dirB); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("task b's directory: %v %v", st.Mode(), err)
	}
	// The setsid child is gone with its task.
	waitfor.Cond(t, 2*time.Second, "task b's setsid child to be killed", func() bool { return len(processesOf(uint32(uid))) == 0 })

	r.Kill("a")
	doneA.wait(t, 10*time.Second)
	if _, err := os.Stat(filepath.Join(dirA, "planted")); err == nil {
		t.Error("task b wrote into task a's directory")
	}
}
