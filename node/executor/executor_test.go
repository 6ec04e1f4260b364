package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/checkpoints"
	"github.com/agora-sched/agora/node/data"
	"github.com/agora-sched/agora/store"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// exited records the exits an executor reports.
type exited struct {
	mu      sync.Mutex
	got     []string
	ch      chan string
	outputs []*market.DataRef
}

func (e *exited) report(k market.TaskKey, epoch uint64, code int, reason string, outputs *market.DataRef) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, reason)
	e.outputs = append(e.outputs, outputs)
	e.ch <- reason
	return true
}

// testExecutor is an executor on its own loopback host and in-memory
// store; its checkpoint peers are every other host in hs.
type testExecutor struct {
	*Executor
	h    host.Host
	ck   *checkpoints.Service
	data *data.Service
	exit *exited
}

// executors starts count executors whose hosts are all connected. peers,
// when set, replaces the default replica choice (every other host).
func executors(t *testing.T, count int, peers func(key string, r int, skip map[peer.ID]bool) []peer.ID) []*testExecutor {
	t.Helper()
	var hs []host.Host
	for range count {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		hs = append(hs, h)
	}
	for i, a := range hs {
		for _, b := range hs[i+1:] {
			if err := a.Connect(context.Background(), peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out []*testExecutor
	for _, h := range hs {
		st, err := store.Open(t.TempDir(), store.InMemory())
		if err != nil {
			t.Fatal(err)
		}
		svc := checkpoints.New(h, st, nil)
		others := func(_ string, r int, skip map[peer.ID]bool) []peer.ID {
			var ps []peer.ID
			for _, o := range hs {
				if o.ID() != h.ID() && !skip[o.ID()] && (r < 0 || len(ps) < r) {
					ps = append(ps, o.ID())
				}
			}
			return ps
		}
		if peers != nil {
			others = peers
		}
		ex := &exited{ch: make(chan string, 16)}
		ds := data.New(h, st, data.Options{})
		x := New(Options{DataDir: t.TempDir(), Store: st, Checkpoints: svc, Data: ds, DataReplicas: 2, Peers: others, Exited: ex.report,
			HostOf: func(market.NodeID) string { return "127.0.0.1" }, PreemptGrace: time.Second})
		t.Cleanup(func() {
			x.Kill()
			x.Close()
			_ = st.Close()
		})
		out = append(out, &testExecutor{Executor: x, h: h, ck: svc, data: ds, exit: ex})
	}
	return out
}

// TestCheckpointPushAndFetch: a snapshot taken on A reaches its two
// replica peers; a node holding nothing of it (its copy dropped and
// collected) finds the newest manifest on its peers, fetches the chunks
// and restores the directory byte for byte.
func TestCheckpointPushAndFetch(t *testing.T) {
	xs := executors(t, 3, nil)
	a, b, c := xs[0], xs[1], xs[2]
	key := checkpoints.Key{Job: "j-net", Task: "train", Replica: 0}
	src := t.TempDir()
	big := make([]byte, 700_000) // two chunks or more
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	files := map[string][]byte{"count": []byte("42\n"), "model.bin": big}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ck := &ckRun{key: key, epoch: 3, dir: src, pushed: map[peer.ID]string{}}
	a.checkpointNow(ck, 5*time.Second)
	if ck.raw == nil || len(ck.pushed) != 2 {
		t.Fatalf("snapshot kept %v, acknowledged by %d replicas (want 2)", ck.raw != nil, len(ck.pushed))
	}
	for _, x := range []*testExecutor{b, c} {
		h, ok, err := x.ck.Store().Manifest(key.String(), nil)
		if err != nil || !ok || h.M.Seq != 3<<32|1 || h.From != a.h.ID().String() {
			t.Fatalf("replica %s: manifest %v seq %d from %s (%v)", x.h.ID(), ok, h.M.Seq, h.From, err)
		}
	}
	// An unchanged directory is not pushed again.
	a.checkpointNow(ck, 5*time.Second)
	if ck.n != 2 || ck.m.Seq != 3<<32|1 {
		t.Fatalf("unchanged snapshot kept again: seq %d", ck.m.Seq)
	}

	// C forgets everything; its restore must come over the network.
	cs := c.ck.Store()
	if err := cs.Drop(key.String()); err != nil {
		t.Fatal(err)
	}
	if n, err := cs.GC(time.Now().Add(time.Hour)); err != nil || n == 0 {
		t.Fatalf("gc on C dropped %d chunks (%v)", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ckResumeTimeout)
	defer cancel()
	// A resume whose manager recorded no earlier placement of A's takes
	// nothing A made.
	stranger := &ckRun{key: key, epoch: 4, dir: t.TempDir(), pushed: map[peer.ID]string{},
		task: market.TaskSpec{Epoch: 4, Previous: []market.Placement{{Node: market.NodeID(b.h.ID().String()), Epoch: 3}}}}
	if m, _, err := c.restoreCheckpoint(ctx, stranger); m != nil || err != nil {
		t.Fatalf("resume from a snapshot of no recorded placement: %v %v", m, err)
	}
	dst := filepath.Join(t.TempDir(), "checkpoint")
	resume := &ckRun{key: key, epoch: 4, dir: dst, pushed: map[peer.ID]string{},
		task: market.TaskSpec{Epoch: 4, Previous: []market.Placement{{Node: market.NodeID(a.h.ID().String()), Epoch: 3}}}}
	m, from, err := c.restoreCheckpoint(ctx, resume)
	if err != nil || m == nil {
		t.Fatalf("restore on C: %v %v", m, err)
	}
	if from != a.h.ID() && from != b.h.ID() {
		t.Fatalf("restored from %q, want A or B", from)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: %d bytes restored, want %d (%v)", name, len(got), len(want), err)
		}
	}
	if _, ok, _ := cs.Manifest(key.String(), nil); !ok {
		t.Fatal("the fetched manifest was not kept on C")
	}

	// No manifest anywhere: nil, no error.
	none := &ckRun{key: checkpoints.Key{Job: "j-none", Task: "t"}, epoch: 2, dir: t.TempDir(), pushed: map[peer.ID]string{}}
	if m, _, err := c.restoreCheckpoint(ctx, none); m != nil || err != nil {
		t.Fatalf("restore of an unknown task: %v %v", m, err)
	}
}

// TestStopWhileRestoring: a stop that arrives while an attempt is still
// restoring its checkpoint means its process never starts, and its exit
// is reported once, as cancelled with the stop's reason.
func TestStopWhileRestoring(t *testing.T) {
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	x := executors(t, 1, func(string, int, map[peer.ID]bool) []peer.ID {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release // holds the restore up until the stop arrived
		return nil
	})[0]
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	key := market.TaskKey{Job: "j-stop", Task: "t"}
	x.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: key}, Command: []string{"touch", marker},
		Epoch: 2, Attempt: 2, CheckpointInterval: time.Second}})
	select {
	case <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("the resumed attempt never looked for its checkpoint")
	}
	x.Stop(market.StopTask{Key: key, Epoch: 2, Reason: "preempted"})
	waitfor.Cond(t, 5*time.Second, "the stop to cancel the pending resume", func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		p := x.pending[runID(key, 2)]
		return p != nil && p.cancelled
	})
	close(release)
	select {
	case r := <-x.exit.ch:
		if r != "cancelled: preempted" {
			t.Fatalf("exit reason %q, want cancelled before start", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit reported for the stopped attempt")
	}
	select {
	case r := <-x.exit.ch:
		t.Fatalf("a second exit was reported: %q", r)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the stopped attempt's process ran")
	}
	waitfor.Cond(t, 5*time.Second, "the task and its checkpoint run to end", func() bool { return len(x.runner.Running()) == 0 && !x.isActive(checkpoints.KeyOf(key).String()) })
}

// TestKillSendsSIGKILL: Kill takes task processes down at once, as a
// kill -9 of the node would: a task's SIGTERM handler never runs and no
// exit is reported.
func TestKillSendsSIGKILL(t *testing.T) {
	x := executors(t, 1, nil)[0]
	dir := t.TempDir()
	script := `trap 'touch "$1/termed"; exit 0' TERM; touch "$1/ready"; while :; do sleep 0.1; done`
	key := market.TaskKey{Job: "j-kill", Task: "t"}
	x.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: key}, Command: []string{"sh", "-c", script, "sh", dir},
		Epoch: 1, Attempt: 1}})
	waitfor.Cond(t, 5*time.Second, "the task to be ready", func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil })
	start := time.Now()
	x.Kill()
	waitfor.Cond(t, 5*time.Second, "the task to stop", func() bool { return len(x.runner.Running()) == 0 })
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Kill took %v", d)
	}
	if _, err := os.Stat(filepath.Join(dir, "termed")); err == nil {
		t.Fatal("the task got SIGTERM")
	}
	exs, err := x.Executions("j-kill")
	if err != nil || len(exs) != 1 {
		t.Fatalf("executions %+v (%v)", exs, err)
	}
	waitfor.Cond(t, 5*time.Second, "the killed attempt's record to say it ended", func() bool { exs, _ = x.Executions("j-kill"); return !exs[0].Finished.IsZero() })
	if exs[0].Reason == "" || exs[0].ExitCode == 0 {
		t.Fatalf("killed attempt recorded as %+v", exs[0])
	}
	select {
	case r := <-x.exit.ch:
		t.Fatalf("a killed executor reported an exit: %q", r)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestDiskReserve: while less than the node's reserve is free on its data
// directory's file system, the task holding the most in its work
// directory is killed, and its exit names the reserve; the others run
// on.
func TestDiskReserve(t *testing.T) {
	every := DiskGuardEvery
	DiskGuardEvery = time.Hour // the guard's own ticks stay out of it: the test calls it
	t.Cleanup(func() { DiskGuardEvery = every })
	x := executors(t, 1, nil)[0]
	start := func(job string, mib int) {
		script := fmt.Sprintf(`head -c %d /dev/zero > big; touch ready; while :; do sleep 0.1; done`, mib<<20)
		x.Start(market.StartTask{Task: market.TaskSpec{TaskOffer: market.TaskOffer{Key: market.TaskKey{Job: job, Task: "t"}},
			Command: []string{"sh", "-c", script}, Epoch: 1, Attempt: 1}})
	}
	start("j-small", 1)
	start("j-large", 8)
	for _, job := range []string{"j-small", "j-large"} {
		ready := filepath.Join(x.taskDir(market.TaskKey{Job: job, Task: "t"}), "work", "ready")
		waitfor.Cond(t, 10*time.Second, job+" to write", func() bool { _, err := os.Stat(ready); return err == nil })
	}
	real := freeBytes
	t.Cleanup(func() { freeBytes = real })
	freeBytes = func(string) (int64, error) { return 10 << 20, nil }
	x.checkReserve(DefaultDiskReserve)
	select {
	case r := <-x.exit.ch:
		if !strings.Contains(r, "disk is nearly full") || !strings.Contains(r, "(8 MiB)") {
			t.Fatalf("exit %q: want the 8 MiB task's, naming the reserve", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no task was killed")
	}
	if running := x.runner.Running(); len(running) != 1 || !strings.Contains(running[0], "j-small") {
		t.Fatalf("running after the guard: %v, want j-small alone", running)
	}
}
