package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node/executor"
	"github.com/agora-sched/agora/store"
)

// TestRestartWithMoreRecordsThanAList: a node whose store holds more job
// records and executions than one store List returns (MaxListEntries)
// still starts, restores every job and closes every attempt it had left
// unfinished.
func TestRestartWithMoreRecordsThanAList(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200,000 records")
	}
	dir := t.TempDir()
	cfg := Config{DataDir: filepath.Join(dir, "data"), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, API: "127.0.0.1:0",
		AdvertInterval: 100 * time.Millisecond, DisableNVML: true}
	n, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	self := market.NodeID(n.ID().String())
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(filepath.Join(cfg.DataDir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	const count = store.MaxListEntries + 1
	now := time.Now()
	jobs := store.NewBucket[market.JobRecord](s, "jobs").WithCodec(wire.EncodeJobRecord, wire.DecodeJobRecord)
	execs := store.NewBucket[executor.Execution](s, "executions")
	var js []store.Entry[market.JobRecord]
	var es []store.Entry[executor.Execution]
	for i := range count {
		id := fmt.Sprintf("j-many-%06d", i)
		// Bare records: what is measured is that every one is read.
		r := market.JobRecord{ID: id, Manager: self, Submitted: now, State: market.JobSucceeded, Finished: now}
		js = append(js, store.Entry[market.JobRecord]{Key: id, Value: r})
		stream := "task/" + id + "/t/0/1" // the executor's record key
		ex := executor.Execution{Key: market.TaskKey{Job: id, Task: "t"}, Attempt: 1, Epoch: 1, Stream: stream, Started: now}
		if i < count-1 { // only the last left unfinished
			ex.Finished = now
		}
		es = append(es, store.Entry[executor.Execution]{Key: stream, Value: ex})
		if len(js) == 20000 || i == count-1 {
			if err := jobs.PutAll(js); err != nil {
				t.Fatal(err)
			}
			if err := execs.PutAll(es); err != nil {
				t.Fatal(err)
			}
			js, es = js[:0], es[:0]
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("restart with %d records: %v", count, err)
	}
	defer n.Kill()
	var c map[market.JobState]int
	if err := n.call(func() { c = n.mkt.JobCounts() }); err != nil || c[market.JobSucceeded] != count {
		t.Fatalf("restored %v jobs, want %d succeeded (%v)", c, count, err)
	}
	last := fmt.Sprintf("j-many-%06d", count-1)
	exs, err := n.Executions(last)
	if err != nil || len(exs) != 1 || exs[0].Finished.IsZero() || exs[0].Reason != "node restarted" {
		t.Fatalf("last execution after restart: %+v, %v", exs, err)
	}
}
