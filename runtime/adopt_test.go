package runtime

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// orphan starts script under the exit wrapper, in a process group of its
// own, as the runtime starts an attempt: a stand-in for the process a
// node that died left running.
func orphan(t *testing.T, script string) (*exec.Cmd, string) {
	t.Helper()
	exit := filepath.Join(t.TempDir(), ".agora-exit-1")
	cmd := exec.Command("/bin/sh", "-c", exitWrapper, "agora-task", exit, "/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Reaped here, as init would reap a real orphan: the runner only
	// looks at the process.
	go func() { _ = cmd.Wait() }()
	return cmd, exit
}

// TestAdoptReportsTheWrappersStatus: an adopted process is watched to
// its end, and its exit status comes from its wrapper's file.
func TestAdoptReportsTheWrappersStatus(t *testing.T) {
	r := newTestRunner(t, Options{})
	cmd, exit := orphan(t, "sleep 0.3; exit 3")
	done := newDone()
	if err := r.Adopt("a", Orphan{PID: cmd.Process.Pid, Started: time.Now(), ExitFile: exit}, done.fn); err != nil {
		t.Fatal(err)
	}
	if got := r.Running(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("Running() = %v", got)
	}
	res := done.wait(t, 5*time.Second)
	if res.ExitCode != 3 || res.Reason != "exit status 3" {
		t.Fatalf("result %+v, want exit status 3", res)
	}
}

// TestAdoptStop: Stop reaches an adopted process's group, and the result
// says it was cancelled.
func TestAdoptStop(t *testing.T) {
	r := newTestRunner(t, Options{})
	cmd, exit := orphan(t, "sleep 30")
	done := newDone()
	if err := r.Adopt("b", Orphan{PID: cmd.Process.Pid, Started: time.Now(), ExitFile: exit, Grace: time.Second}, done.fn); err != nil {
		t.Fatal(err)
	}
	r.Stop("b", "cancelled by user")
	res := done.wait(t, 5*time.Second)
	if !res.Cancelled || res.ExitCode != -1 {
		t.Fatalf("result %+v, want cancelled", res)
	}
}

// TestAdoptRefusesAStranger: a process that does not lead its own group
// is no attempt's main process.
func TestAdoptRefusesAStranger(t *testing.T) {
	r := newTestRunner(t, Options{})
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := r.Adopt("c", Orphan{PID: cmd.Process.Pid, Started: time.Now()}, nil); err == nil {
		t.Fatal("adopted a process in the test's own group")
	}
}
