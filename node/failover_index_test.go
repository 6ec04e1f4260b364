package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
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
