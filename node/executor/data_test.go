package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
)

// TestOutputsThenInputs (issue 23): a task's outputs are stored and
// copied to two peers before its success is reported; a task elsewhere
// that takes them finds them placed, byte-identical; an input no live
// peer holds fails the attempt naming the input; a missing output fails
// the attempt naming it.
func TestOutputsThenInputs(t *testing.T) {
	xs := executors(t, 3, nil)
	a, b := xs[0], xs[1]
	prep := market.TaskKey{Job: "j-data", Task: "prep"}
	a.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: prep}, Epoch: 1, Attempt: 1,
		Command: []string{"sh", "-c", "mkdir -p res/sub && head -c 1500000 /dev/urandom > res/sub/x && echo hi > note"},
		Outputs: []spec.Output{{Path: "res"}, {Path: "note"}}}})
	if r := <-a.exit.ch; r != "" && !strings.Contains(r, "exit status 0") {
		t.Fatalf("prep: %q", r)
	}
	ref := a.exit.outputs[0]
	if ref == nil || len(ref.Holders) != 3 || ref.Bytes != 1500003 {
		t.Fatalf("prep's outputs: %+v", ref)
	}
	for _, x := range xs {
		if !x.data.Store().Complete(ref.Manifest) {
			t.Fatalf("%s does not hold prep's outputs", x.h.ID())
		}
	}
	src, _ := os.ReadFile(filepath.Join(a.taskDir(prep), "work", "res", "sub", "x"))

	train := market.TaskKey{Job: "j-data", Task: "train"}
	b.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: train}, Epoch: 1, Attempt: 1,
		Command: []string{"sh", "-c", "cat in/x > copy && cat all/note"},
		Inputs: []market.InputRef{
			{Input: 0, DataRef: *ref, Select: "res/sub", Path: "in"},
			{Input: 1, DataRef: *ref, Path: "all"},
		}}})
	if r := <-b.exit.ch; r != "" && !strings.Contains(r, "exit status 0") {
		t.Fatalf("train: %q", r)
	}
	got, _ := os.ReadFile(filepath.Join(b.taskDir(train), "work", "copy"))
	if len(src) != 1500000 || string(got) != string(src) {
		t.Fatalf("train's copy of res/sub/x: %d bytes, want the %d prep wrote", len(got), len(src))
	}

	lost := market.TaskKey{Job: "j-data", Task: "lost"}
	b.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: lost}, Epoch: 1, Attempt: 1, Command: []string{"true"},
		Inputs: []market.InputRef{{Input: 3, DataRef: market.DataRef{Manifest: strings.Repeat("ab", 32), Holders: []market.NodeID{market.NodeID(a.h.ID().String())}}, Path: "x"}}}})
	select {
	case r := <-b.exit.ch:
		if !strings.Contains(r, "input 3") || !strings.Contains(r, "no live holder") {
			t.Fatalf("an input nobody holds: %q", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit for a task whose input nobody holds")
	}

	none := market.TaskKey{Job: "j-data", Task: "none"}
	a.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: none}, Epoch: 1, Attempt: 1, Command: []string{"true"},
		Outputs: []spec.Output{{Path: "out.bin"}}}})
	if r := <-a.exit.ch; !strings.Contains(r, "keeping outputs: output out.bin: not produced") {
		t.Fatalf("a missing output: %q", r)
	}

	// An output over its limit fails the attempt before a byte of it is
	// stored.
	big := market.TaskKey{Job: "j-data", Task: "big"}
	a.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: big}, Epoch: 1, Attempt: 1,
		Command: []string{"sh", "-c", "mkdir d && head -c 700000 /dev/urandom > d/a && head -c 700000 /dev/urandom > d/b"},
		Outputs: []spec.Output{{Path: "d", Max: 1 << 20}}}})
	if r := <-a.exit.ch; !strings.Contains(r, "keeping outputs: output d: over its limit of 1048576 bytes") {
		t.Fatalf("an output over its limit: %q", r)
	}
	if u, _ := a.data.Store().Usage(); u.All != ref.Bytes {
		t.Fatalf("the store keeps %d bytes, want only prep's %d", u.All, ref.Bytes)
	}
}

// TestOutputsOfADownExit: an attempt that succeeded while its node was
// down (its exit file says 0) has its outputs kept at the restart and
// reported with the exit, as a success's are.
func TestOutputsOfADownExit(t *testing.T) {
	h := executors(t, 1, nil)[0]
	k := market.TaskKey{Job: "j-down", Task: "prep"}
	dir := h.taskDir(k)
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "work", "out.bin"), []byte("made while down"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exitFile(dir, 4), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stream := logStream(k, 2)
	if err := h.execs.Put(stream, Execution{Key: k, Attempt: 2, Epoch: 4, Stream: stream, Started: time.Now(),
		Outputs: []spec.Output{{Path: "out.bin"}}}); err != nil {
		t.Fatal(err)
	}
	// The node restarts on the same store and data directory.
	x := New(Options{DataDir: h.opts.DataDir, Store: h.opts.Store, Checkpoints: h.ck, Data: h.data, Peers: h.opts.Peers,
		Exited: h.exit.report, HostOf: h.opts.HostOf})
	defer x.Close()
	down := x.ExitedWhileDown()
	if len(down) != 1 || down[0].ExitCode != 0 || down[0].Outputs == nil || down[0].Outputs.Bytes != 15 {
		t.Fatalf("exits found at the restart: %+v", down)
	}
	if !h.data.Store().Complete(down[0].Outputs.Manifest) {
		t.Fatal("the outputs are not kept")
	}
}
