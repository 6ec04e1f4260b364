package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/runtime"
)

// startNodes starts n nodes on loopback, each bootstrapping from the
// first, and waits until every one sees all the others.
func startNodes(t testing.TB, count int) []*Node {
	t.Helper()
	var nodes []*Node
	for i := 0; i < count; i++ {
		cfg := Config{DataDir: filepath.Join(t.TempDir(), "data"), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
			API: "127.0.0.1:0", AdvertInterval: 100 * time.Millisecond, DisableNVML: true}
		if i > 0 {
			for _, a := range nodes[0].Addrs() {
				cfg.Bootstrap = append(cfg.Bootstrap, a.String())
			}
		}
		n, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Kill)
		nodes = append(nodes, n)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range nodes {
		for len(n.Peers()) < count-1 {
			if time.Now().After(deadline) {
				t.Fatalf("node %s sees %d peers, want %d", n.ID(), len(n.Peers()), count-1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nodes
}

// TestCheckpointPushAndFetch: a snapshot taken on A reaches its two
// replica peers over the checkpoint protocol; a node holding nothing of it
// (its copy dropped and collected) finds the newest manifest on its peers,
// fetches the chunks and restores the directory byte for byte.
func TestCheckpointPushAndFetch(t *testing.T) {
	nodes := startNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	key := ckKey{Job: "j-net", Task: "train", Replica: 0}
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
	for _, n := range []*Node{b, c} {
		m, _, ok, err := n.ck.cs.manifest(key.String())
		if err != nil || !ok || m.Seq != 3<<32|1 {
			t.Fatalf("replica %s: manifest %v seq %d (%v)", n.ID(), ok, m.Seq, err)
		}
	}
	// An unchanged directory is not pushed again.
	a.checkpointNow(ck, 5*time.Second)
	if ck.n != 2 || ck.m.Seq != 3<<32|1 {
		t.Fatalf("unchanged snapshot kept again: seq %d", ck.m.Seq)
	}

	// C forgets everything; its restore must come over the network.
	if err := c.ck.cs.drop(key.String()); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ck.cs.gc(time.Now().Add(chunkGrace + time.Second)); err != nil || n == 0 {
		t.Fatalf("gc on C dropped %d chunks (%v)", n, err)
	}
	dst := filepath.Join(t.TempDir(), "checkpoint")
	resume := &ckRun{key: key, epoch: 4, dir: dst, pushed: map[peer.ID]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), ckResumeTimeout)
	defer cancel()
	m, from, err := c.restoreCheckpoint(ctx, resume)
	if err != nil || m == nil {
		t.Fatalf("restore on C: %v %v", m, err)
	}
	if from != a.ID() && from != b.ID() {
		t.Fatalf("restored from %q, want A or B", from)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: %d bytes restored, want %d (%v)", name, len(got), len(want), err)
		}
	}
	if _, _, ok, _ := c.ck.cs.manifest(key.String()); !ok {
		t.Fatal("the fetched manifest was not kept on C")
	}

	// No manifest anywhere: nil, no error.
	none := &ckRun{key: ckKey{Job: "j-none", Task: "t"}, epoch: 2, dir: t.TempDir(), pushed: map[peer.ID]string{}}
	if m, _, err := c.restoreCheckpoint(ctx, none); m != nil || err != nil {
		t.Fatalf("restore of an unknown task: %v %v", m, err)
	}
}

// TestCheckpointStopWhileRestoring: a stop that arrives while an attempt
// is still restoring its checkpoint means its process never starts, and
// its exit is reported once, as cancelled with the stop's reason.
func TestCheckpointStopWhileRestoring(t *testing.T) {
	n := startNodes(t, 1)[0]
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	key := market.TaskKey{Job: "j-stop", Task: "t"}
	ck := n.newCkRun(market.TaskSpec{TaskOffer: market.TaskOffer{Key: key}, Epoch: 2, Attempt: 2, CheckpointInterval: time.Second}, filepath.Join(dir, "checkpoint"))
	spec := runtime.Spec{JobID: key.Job, Task: key.Task, Attempt: 2, Epoch: 2, Command: []string{"touch", marker}, WorkDir: filepath.Join(dir, "work")}
	results := make(chan runtime.Result, 2)
	done := func(r runtime.Result) {
		n.finishCheckpoints(ck, r)
		results <- r
	}
	n.ck.cs.gcMu.Lock() // holds the restore up until the stop arrived
	n.resumeThenStart(ck, runID(key, 2), spec, nil, done)
	n.stopTask(market.StopTask{Key: key, Epoch: 2, Reason: "preempted"})
	n.ck.cs.gcMu.Unlock()
	select {
	case r := <-results:
		if !r.Cancelled || r.Reason != "cancelled: preempted" || !r.Started.IsZero() {
			t.Fatalf("result %+v, want cancelled before start", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit reported for the stopped attempt")
	}
	select {
	case r := <-results:
		t.Fatalf("a second exit was reported: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the stopped attempt's process ran")
	}
	if len(n.runner.Running()) != 0 || n.ck.isActive(ck.key.String()) {
		t.Fatal("the stopped attempt is still tracked")
	}
}

// TestKillSendsSIGKILL: Kill takes task processes down at once, as a
// kill -9 of the node would: a task's SIGTERM handler never runs.
func TestKillSendsSIGKILL(t *testing.T) {
	n := startNodes(t, 1)[0]
	dir := t.TempDir()
	script := `trap 'touch "$1/termed"; exit 0' TERM; touch "$1/ready"; while :; do sleep 0.1; done`
	spec := runtime.Spec{JobID: "j-kill", Task: "t", Attempt: 1, Epoch: 1, Command: []string{"sh", "-c", script, "sh", dir},
		WorkDir: filepath.Join(dir, "work"), Grace: 5 * time.Second}
	exited := make(chan runtime.Result, 1)
	n.launch("j-kill/t/0@1", spec, nil, func(r runtime.Result) { exited <- r }, nil)
	deadline := time.Now().Add(5 * time.Second)
	for _, err := os.Stat(filepath.Join(dir, "ready")); err != nil; _, err = os.Stat(filepath.Join(dir, "ready")) {
		if time.Now().After(deadline) {
			t.Fatal("task did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	n.Kill()
	select {
	case r := <-exited:
		if r.Signal != "killed" {
			t.Fatalf("task ended with %+v, want killed by SIGKILL", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("task still running after Kill")
	}
	if _, err := os.Stat(filepath.Join(dir, "termed")); err == nil {
		t.Fatal("the task got SIGTERM")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Kill took %v", d)
	}
}
