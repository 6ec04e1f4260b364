package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

func TestEnvironment(t *testing.T) {
	script := `echo "J=$AGORA_JOB_ID"; echo "T=$AGORA_TASK"; echo "A=$AGORA_ATTEMPT"; ` +
		`echo "E=$AGORA_EPOCH"; echo "R=$AGORA_REPLICA"; echo "C=${CUDA_VISIBLE_DEVICES-unset}"; ` +
		`echo "K=${AGORA_CHECKPOINT_DIR-unset}"; echo "U=$USER_VAR"; echo "X=$AGORA_RANK"; echo "N=$NODE_VAR"`
	t.Setenv("NODE_VAR", "inherited")
	r := newTestRunner(t, Options{})

	cases := []struct {
		name string
		gpus []int
		ckpt string
		want []string
	}{
		{"two GPUs", []int{0, 1}, "/ckpt/x", []string{"C=0,1", "K=/ckpt/x"}},
		{"no GPU", nil, "", []string{"C=", "K=unset"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(t, sh(script))
			spec.Attempt = 2
			spec.Epoch = 9
			spec.GPUs = tc.gpus
			spec.CheckpointDir = tc.ckpt
			spec.Env = map[string]string{"USER_VAR": "u", "AGORA_TASK": "forged"}
			spec.ExtraEnv = map[string]string{"AGORA_RANK": "1"}
			out, done := newRecorder(), newDone()
			if err := r.Start("env-"+tc.name, spec, out, done.fn); err != nil {
				t.Fatal(err)
			}
			if res := done.wait(t, 5*time.Second); res.ExitCode != 0 {
				t.Fatalf("result %+v", res)
			}
			lines := strings.Split(strings.TrimSpace(out.text(StreamStdout)), "\n")
			want := append([]string{"J=job-1", "T=train", "A=2", "E=9", "R=0", "U=u", "X=1", "N=inherited"}, tc.want...)
			for _, w := range want {
				if !slices.Contains(lines, w) {
					t.Errorf("missing %q in %q", w, lines)
				}
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	r := newTestRunner(t, Options{})
	for _, code := range []int{0, 3} {
		done := newDone()
		if err := r.Start(fmt.Sprintf("exit-%d", code), testSpec(t, sh(fmt.Sprintf("exit %d", code))), nil, done.fn); err != nil {
			t.Fatal(err)
		}
		res := done.wait(t, 5*time.Second)
		wantReason := fmt.Sprintf("exit status %d", code)
		if res.ExitCode != code || res.Reason != wantReason || res.Signal != "" || res.TimedOut || res.Cancelled {
			t.Errorf("exit %d: result %+v", code, res)
		}
		if res.Pid <= 0 || res.Started.IsZero() || res.Finished.Before(res.Started) {
			t.Errorf("exit %d: bad pid or times: %+v", code, res)
		}
	}
}

func TestStdoutAndStderr(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh("echo to-out; echo to-err >&2; printf partial"))
	if err := r.Start("streams", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	done.wait(t, 5*time.Second)
	if got := out.text(StreamStdout); got != "to-out\npartial" {
		t.Errorf("stdout = %q", got)
	}
	if got := out.text(StreamStderr); got != "to-err\n" {
		t.Errorf("stderr = %q", got)
	}
	if len(out.bad) > 0 {
		t.Errorf("unexpected streams %q", out.bad)
	}
}

func TestLargeOutputIsChunked(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	const size = 300000
	if err := r.Start("big", testSpec(t, []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}), out, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 5*time.Second); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if n := len(out.text(StreamStdout)); n != size {
		t.Errorf("got %d bytes, want %d", n, size)
	}
	if out.maxChunk > MaxChunk {
		t.Errorf("chunk of %d bytes exceeds %d", out.maxChunk, MaxChunk)
	}
}

func TestWorkDirCreatedAndUsed(t *testing.T) {
	r := newTestRunner(t, Options{})
	dir := filepath.Join(t.TempDir(), "data", "jobs", "job-1", "train")
	spec := testSpec(t, sh(`pwd; echo hi > marker`))
	spec.WorkDir = dir
	out, done := newRecorder(), newDone()
	if err := r.Start("wd", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 5*time.Second); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if got := strings.TrimSpace(out.text(StreamStdout)); got != dir {
		t.Errorf("pwd = %q, want %q", got, dir)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "marker")); err != nil || string(data) != "hi\n" {
		t.Errorf("marker = %q, %v", data, err)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh(`sleep 100 & echo $!; sleep 100`))
	spec.Timeout = 200 * time.Millisecond
	spec.Grace = 5 * time.Second
	start := time.Now()
	if err := r.Start("timeout", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 5*time.Second)
	elapsed := time.Since(start)
	if !res.TimedOut || res.Cancelled || res.Reason != "timeout after 200ms" || res.ExitCode != -1 || res.Signal != "terminated" {
		t.Errorf("result %+v", res)
	}
	if elapsed >= spec.Timeout+spec.Grace {
		t.Errorf("took %s, not within grace", elapsed)
	}
	grandchild := firstLineInt(t, out.text(StreamStdout))
	waitfor.Cond(t, 2*time.Second, "grandchild to die", func() bool { return processGone(grandchild) })
}

func TestTimeoutEscalatesToKill(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh(`trap "" TERM; sleep 100 & echo $!; sleep 100`))
	spec.Timeout = 100 * time.Millisecond
	spec.Grace = 300 * time.Millisecond
	start := time.Now()
	if err := r.Start("timeout-kill", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 5*time.Second)
	elapsed := time.Since(start)
	if !res.TimedOut || res.Signal != "killed" || res.ExitCode != -1 || res.Reason != "timeout after 100ms" {
		t.Errorf("result %+v", res)
	}
	if elapsed < spec.Timeout+spec.Grace {
		t.Errorf("killed after %s, before the grace period ended", elapsed)
	}
	grandchild := firstLineInt(t, out.text(StreamStdout))
	waitfor.Cond(t, 2*time.Second, "grandchild to die", func() bool { return processGone(grandchild) })
}

func TestStopTrappedTermExitsCleanly(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh(`trap "echo got-term; exit 0" TERM; echo ready; sleep 100 & wait`))
	spec.Grace = 0 // DefaultGrace
	if err := r.Start("trap", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, StreamStdout, "ready")
	start := time.Now()
	if !r.Stop("trap", "preempted") {
		t.Fatal("Stop returned false for a running task")
	}
	res := done.wait(t, 5*time.Second)
	if res.ExitCode != 0 || res.Signal != "" || !res.Cancelled || res.TimedOut || res.Reason != "cancelled: preempted" {
		t.Errorf("result %+v", res)
	}
	if elapsed := time.Since(start); elapsed > DefaultGrace/2 {
		t.Errorf("stop took %s", elapsed)
	}
	if !strings.Contains(out.text(StreamStdout), "got-term") {
		t.Errorf("trap did not run: %q", out.text(StreamStdout))
	}
}

func TestStopIgnoredTermGetsKilled(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh(`trap "" TERM; echo ready; sleep 100`))
	spec.Grace = 300 * time.Millisecond
	if err := r.Start("stubborn", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, StreamStdout, "ready")
	start := time.Now()
	r.Stop("stubborn", "")
	r.Stop("stubborn", "second reason is ignored")
	res := done.wait(t, 5*time.Second)
	elapsed := time.Since(start)
	if res.ExitCode != -1 || res.Signal != "killed" || !res.Cancelled || res.Reason != "cancelled" {
		t.Errorf("result %+v", res)
	}
	if elapsed < spec.Grace || elapsed > spec.Grace+3*time.Second {
		t.Errorf("killed after %s, want about %s", elapsed, spec.Grace)
	}
}

func TestKill(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh(`trap "" TERM; echo ready; sleep 100`))
	spec.Grace = time.Hour
	if err := r.Start("kill", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, StreamStdout, "ready")
	if !r.Kill("kill") {
		t.Fatal("Kill returned false for a running task")
	}
	res := done.wait(t, 5*time.Second)
	if res.Signal != "killed" || !res.Cancelled || res.Reason != "cancelled: killed" {
		t.Errorf("result %+v", res)
	}
}

func TestStartFailures(t *testing.T) {
	r := newTestRunner(t, Options{})
	cases := []struct {
		name   string
		spec   Spec
		reason string
	}{
		{"missing executable", testSpec(t, []string{"agora-no-such-binary"}),
			`start: exec: "agora-no-such-binary": executable file not found in $PATH`},
		{"missing path", testSpec(t, []string{"/nonexistent/agora-bin"}),
			"start: fork/exec /nonexistent/agora-bin: no such file or directory"},
		{"empty command", testSpec(t, nil), "start: runtime: empty command"},
	}
	for _, tc := range cases {
		done := newDone()
		if err := r.Start(tc.name, tc.spec, newRecorder(), done.fn); err != nil {
			t.Fatalf("%s: Start error %v, want a result", tc.name, err)
		}
		res := done.wait(t, 5*time.Second)
		if res.ExitCode != -1 || res.Reason != tc.reason || res.Pid != 0 || !res.Started.IsZero() || res.Finished.IsZero() {
			t.Errorf("%s: result %+v, want reason %q", tc.name, res, tc.reason)
		}
	}
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ids := r.Running(); len(ids) != 0 {
		t.Errorf("still running: %q", ids)
	}
}

func TestStartRejectsBadIDs(t *testing.T) {
	r := newTestRunner(t, Options{})
	if err := r.Start("", testSpec(t, sh("true")), nil, nil); err == nil {
		t.Error("empty id accepted")
	}
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh("echo ready; sleep 100"))
	if err := r.Start("dup", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, StreamStdout, "ready")
	other := newDone()
	if err := r.Start("dup", spec, nil, other.fn); err == nil || !strings.HasPrefix(err.Error(), "runtime: ") {
		t.Errorf("duplicate id: err = %v", err)
	}
	r.Kill("dup")
	done.wait(t, 5*time.Second)
	if n := other.calls.Load(); n != 0 {
		t.Errorf("done of rejected start called %d times", n)
	}
}

func TestConcurrentRuns(t *testing.T) {
	r := newTestRunner(t, Options{})
	const n = 20
	dones := make([]*doneRecorder, n)
	outs := make([]*recorder, n)
	var wg sync.WaitGroup
	for i := range n {
		dones[i], outs[i] = newDone(), newRecorder()
		wg.Go(func() {
			spec := testSpec(t, sh(`echo "$AGORA_TASK"; exit $AGORA_ATTEMPT`))
			spec.Task = fmt.Sprintf("task-%d", i)
			spec.Attempt = i % 4
			if err := r.Start(spec.Task, spec, outs[i], dones[i].fn); err != nil {
				t.Error(err)
			}
			r.Running() // exercise concurrent readers
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if c := dones[i].calls.Load(); c != 1 {
			t.Errorf("task %d: done called %d times", i, c)
			continue
		}
		res := <-dones[i].ch
		if res.ExitCode != i%4 {
			t.Errorf("task %d: exit %d", i, res.ExitCode)
		}
		if got, want := outs[i].text(StreamStdout), fmt.Sprintf("task-%d\n", i); got != want {
			t.Errorf("task %d: stdout %q, want %q", i, got, want)
		}
	}
}

func TestDoneCalledExactlyOnce(t *testing.T) {
	r := newTestRunner(t, Options{})
	var dones []*doneRecorder
	for i := range 10 {
		id := fmt.Sprint("once-", i)
		d := newDone()
		dones = append(dones, d)
		spec := testSpec(t, sh("exit 0"))
		spec.Timeout = time.Duration(i) * time.Millisecond
		spec.Grace = 10 * time.Millisecond
		if err := r.Start(id, spec, nil, d.fn); err != nil {
			t.Fatal(err)
		}
		// Race stop requests against the natural exit.
		go r.Stop(id, "race")
		go r.Kill(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // leave room for a stray second call
	for i, d := range dones {
		if c := d.calls.Load(); c != 1 {
			t.Errorf("task %d: done called %d times", i, c)
		}
	}
	if r.Stop("once-0", "late") || r.Kill("once-0") {
		t.Error("Stop or Kill reported a finished task as known")
	}
}

func TestStopAllAndWait(t *testing.T) {
	r := newTestRunner(t, Options{})
	var dones []*doneRecorder
	for i := range 3 {
		d, out := newDone(), newRecorder()
		dones = append(dones, d)
		if err := r.Start(fmt.Sprint("sleeper-", i), testSpec(t, sh("echo ready; sleep 100")), out, d.fn); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, StreamStdout, "ready")
	}
	if got := r.Running(); !slices.Equal(got, []string{"sleeper-0", "sleeper-1", "sleeper-2"}) {
		t.Errorf("Running() = %q", got)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with running tasks: err = %v", err)
	}
	if r.Stop("unknown", "x") || r.Kill("unknown") {
		t.Error("unknown id reported as known")
	}
	r.StopAll("drain")
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i, d := range dones {
		res := <-d.ch
		if !res.Cancelled || res.Reason != "cancelled: drain" {
			t.Errorf("sleeper %d: result %+v", i, res)
		}
	}
	if got := r.Running(); len(got) != 0 {
		t.Errorf("Running() after Wait = %q", got)
	}
}

func TestLeftoverGroupMembersKilledOnExit(t *testing.T) {
	// A generous drain timeout proves that the group kill, not the timeout,
	// closes the pipe the grandchild holds.
	r := newTestRunner(t, Options{DrainTimeout: time.Minute})
	out, done := newRecorder(), newDone()
	if err := r.Start("leftover", testSpec(t, sh(`sleep 100 & echo $!`)), out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 5*time.Second)
	if res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
	grandchild := firstLineInt(t, out.text(StreamStdout))
	waitfor.Cond(t, 2*time.Second, "grandchild to die", func() bool { return processGone(grandchild) })
}

func TestEscapedProcessDoesNotBlockDone(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	r := newTestRunner(t, Options{DrainTimeout: 300 * time.Millisecond})
	out, done := newRecorder(), newDone()
	// The escapee leaves the process group but keeps stdout open.
	spec := testSpec(t, sh(`setsid sh -c 'echo $$; exec sleep 30' & sleep 0.3`))
	if err := r.Start("escape", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 5*time.Second)
	if res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
	if pid := firstLineInt(t, out.text(StreamStdout)); pid > 1 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestDefaultOptionsRunTasks(t *testing.T) {
	// Whatever cgroup support the machine has, tasks must run.
	r := NewRunner(Options{})
	done := newDone()
	spec := testSpec(t, sh("exit 0"))
	spec.CPUMilli = 500
	spec.Memory = 64 << 20
	if err := r.Start("default", spec, nil, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 5*time.Second); res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestRelativeCommandRunsFromWorkDir(t *testing.T) {
	r := newTestRunner(t, Options{})
	spec := testSpec(t, []string{"./run.sh", "arg"})
	if err := os.WriteFile(filepath.Join(spec.WorkDir, "run.sh"), []byte("#!/bin/sh\necho \"ran $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, done := newRecorder(), newDone()
	if err := r.Start("relative", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	if res := done.wait(t, 5*time.Second); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if got := out.text(StreamStdout); got != "ran arg\n" {
		t.Errorf("stdout = %q", got)
	}
}
