package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
)

// storeTestReplicas stores, on n as if pushed by manager m, open
// unfinished records and done finished ones, and returns their IDs.
func storeTestReplicas(tb testing.TB, n, m *Node, open, done int) (openIDs, doneIDs []string) {
	tb.Helper()
	var msgs []jobReplicaMsg
	for i := range open + done {
		id := fmt.Sprintf("j-idx-%06d", i)
		r := testRecord(tb, id, m)
		if i >= open {
			r.State, r.Finished = market.JobSucceeded, time.Now()
			doneIDs = append(doneIDs, id)
		} else {
			openIDs = append(openIDs, id)
		}
		msgs = append(msgs, jobReplicaMsg{Record: r, Replicas: []string{n.ID().String(), m.ID().String()}})
	}
	for len(msgs) > 0 {
		k := min(len(msgs), 500)
		if rep := n.storeReplicas(m.ID().String(), msgs[:k]); rep.Error != "" || rep.Stored != k {
			tb.Fatalf("store replicas: %+v", rep)
		}
		msgs = msgs[k:]
	}
	return openIDs, doneIDs
}

// TestReplicaIndex: the failover check's index holds the unfinished
// replicas only, follows a record that finishes, and is rebuilt from the
// store as it was.
func TestReplicaIndex(t *testing.T) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	openIDs, doneIDs := storeTestReplicas(t, a, b, 3, 4)
	snapshot := func() map[string]openReplica {
		a.fo.mu.Lock()
		defer a.fo.mu.Unlock()
		out := map[string]openReplica{}
		for k, v := range a.fo.open {
			out[k] = v
		}
		return out
	}
	idx := snapshot()
	if len(idx) != len(openIDs) {
		t.Fatalf("index holds %d records, want the %d unfinished: %v", len(idx), len(openIDs), idx)
	}
	for _, id := range openIDs {
		if r := idx[id]; r.manager != b.ID().String() || len(r.replicas) != 2 {
			t.Fatalf("%s indexed as %+v", id, r)
		}
	}
	for _, id := range doneIDs {
		if _, ok := idx[id]; ok {
			t.Fatalf("finished %s indexed", id)
		}
	}
	// One of them finishes: it leaves the index, its replica stays for
	// status queries.
	r := testRecord(t, openIDs[0], b)
	r.State = market.JobFailed
	if rep := a.storeReplicas(b.ID().String(), []jobReplicaMsg{{Record: r}}); rep.Stored != 1 {
		t.Fatalf("store: %+v", rep)
	}
	if _, ok := snapshot()[openIDs[0]]; ok {
		t.Fatal("finished record still indexed")
	}
	if _, ok := replicaOf(t, a, openIDs[0]); !ok {
		t.Fatal("finished record's replica dropped")
	}
	// Rebuilt from the store: the same index.
	want := snapshot()
	a.fo.mu.Lock()
	clear(a.fo.open)
	a.fo.mu.Unlock()
	if err := a.loadReplicaIndex(); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(openIDs)-1 {
		t.Fatalf("rebuilt index %v, want %v", got, want)
	}
}

// BenchmarkFailoverCheck: one failover check on a node holding 20
// unfinished replicas and 5,000 finished ones (a node that has been up a
// while), against the baseline of reading and decoding every stored
// replica, as the check did before it kept an index, in the same run.
func BenchmarkFailoverCheck(b *testing.B) {
	nodes := startNodes(b, 2)
	n, m := nodes[0], nodes[1]
	storeTestReplicas(b, n, m, 20, 5000)
	var base time.Duration
	const baseRuns = 5
	for range baseRuns {
		t0 := time.Now()
		recs, err := n.replicas.List("")
		if err != nil || len(recs) != 5020 {
			b.Fatalf("list: %d, %v", len(recs), err)
		}
		open := 0
		for _, e := range recs {
			if !e.Value.Record.State.Terminal() {
				open++
			}
		}
		if open != 20 {
			b.Fatalf("%d open", open)
		}
		base += time.Since(t0)
	}
	b.ResetTimer()
	for b.Loop() {
		n.checkFailover()
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(base/baseRuns)/float64(time.Millisecond), "decode_all_ms")
	b.ReportMetric(float64(per)/float64(base/baseRuns), "check_vs_decode_all")
}

// BenchmarkStoreReplicas: a replica peer checking and storing one frame
// of 8 job records of 25 tasks each, as a manager pushes them while a
// burst of jobs runs (each task with one attempt in its history), in
// each job-record protocol version's frame: version 2's JSON, version
// 3's binary records. JSON dominated version 2: scanning alone cost
// about as much as decoding, so storing the record as received instead
// of re-encoding it measured no faster (5.6-7.5 ms against 5.9-6.9 ms per
// frame); version 3 is what that measurement called for.
func BenchmarkStoreReplicas(b *testing.B) {
	nodes := startNodes(b, 2)
	n, m := nodes[0], nodes[1]
	tasks := make([]string, 25)
	for i := range tasks {
		tasks[i] = fmt.Sprintf(`{"name": "t%02d", "command": ["true"], "resources": {"cpu": "100m"}}`, i)
	}
	js, err := spec.Parse([]byte(`{"name": "burst", "tasks": [`+strings.Join(tasks, ",")+`]}`), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	var v2, v3 []byte
	{
		var recs []encodedRecord
		for i := range recordsPerFrame {
			r := market.JobRecord{ID: fmt.Sprintf("j-store-%d", i), Spec: *js, Manager: market.NodeID(m.ID().String()),
				Submitted: now, State: market.JobRunning}
			for k := range 25 {
				key := market.TaskKey{Job: r.ID, Task: fmt.Sprintf("t%02d", k)}
				r.Tasks = append(r.Tasks, market.TaskRecord{Key: key, State: market.TaskRunning, Node: market.NodeID(n.ID().String()),
					Epoch: 2, Attempts: 1, Ready: now, Started: now,
					History: []market.AttemptRecord{{Attempt: 1, Epoch: 2, Node: market.NodeID(n.ID().String()), State: market.TaskRunning, Awarded: now, Started: now}}})
			}
			e, err := encodeRecord(r, []string{n.ID().String(), m.ID().String()})
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, e)
		}
		_, v3 = recordFrameV3(recs)
		if recs, err = withJSON(recs); err != nil {
			b.Fatal(err)
		}
		_, v2 = recordFrame(recs)
	}
	from := m.ID().String()
	for _, v := range []struct {
		name  string
		body  []byte
		store func(string, []byte) recordBatchReply
	}{{"v2-json", v2, n.storeFrame}, {"v3-binary", v3, n.storeFrameV3}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(v.body)))
			for b.Loop() {
				if rep := v.store(from, v.body); rep.Stored != recordsPerFrame {
					b.Fatalf("%+v", rep)
				}
			}
		})
	}
}
