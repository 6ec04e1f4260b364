package replication

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/store"
)

// BenchmarkStoreReplicas: a replica peer checking and storing one frame
// of 8 job records of 25 tasks each, as a manager pushes them while a
// burst of jobs runs (each task with one attempt in its history). The
// baseline, run in the same process, does the same work with the records
// as JSON — decode, check, store as JSON — which is what the unreleased
// JSON draft of the protocol did; binary_vs_json is the ratio of the
// two per frame.
func BenchmarkStoreReplicas(b *testing.B) {
	ends := newEnds(b, 2)
	n, m := ends[0], ends[1]
	tasks := make([]string, 25)
	for i := range tasks {
		tasks[i] = fmt.Sprintf(`{"name": "t%02d", "command": ["true"], "resources": {"cpu": "100m"}}`, i)
	}
	js, err := spec.Parse([]byte(`{"name": "burst", "tasks": [`+strings.Join(tasks, ",")+`]}`), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	set := []market.NodeID{n.id(), m.id()}
	var elems [][]byte
	type jsonCopy struct {
		Record   market.JobRecord `json:"record"`
		Replicas []market.NodeID  `json:"replicas"`
	}
	var jsonFrame struct {
		Records []jsonCopy `json:"records"`
	}
	for i := range recordsPerFrame {
		r := market.JobRecord{ID: fmt.Sprintf("j-store-%d", i), Spec: *js, Manager: m.id(), Submitted: now, State: market.JobRunning}
		for k := range 25 {
			key := market.TaskKey{Job: r.ID, Task: fmt.Sprintf("t%02d", k)}
			r.Tasks = append(r.Tasks, market.TaskRecord{Key: key, State: market.TaskRunning, Node: n.id(), Epoch: 2, Attempts: 1,
				Ready: now, Started: now,
				History: []market.AttemptRecord{{Attempt: 1, Epoch: 2, Node: n.id(), State: market.TaskRunning, Awarded: now, Started: now}}})
		}
		e, err := encodeElement(r, set)
		if err != nil {
			b.Fatal(err)
		}
		elems = append(elems, e)
		jsonFrame.Records = append(jsonFrame.Records, jsonCopy{Record: r, Replicas: set})
	}
	k, binary := requestFrame(elems)
	if k != recordsPerFrame {
		b.Fatalf("frame holds %d records", k)
	}
	jsonBody, err := json.Marshal(jsonFrame)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(b.TempDir(), store.InMemory())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	jsonBucket := store.NewBucket[Copy](st, "replicas-json").AllowLarge(MaxFrame)
	storeJSON := func() {
		var f struct {
			Records []jsonCopy `json:"records"`
		}
		if err := json.Unmarshal(jsonBody, &f); err != nil {
			b.Fatal(err)
		}
		entries := make([]store.Entry[Copy], 0, len(f.Records))
		for _, c := range f.Records {
			if err := market.CheckReplica(nil, now, m.id(), c.Record, nil); err != nil {
				b.Fatal(err)
			}
			entries = append(entries, store.Entry[Copy]{Key: c.Record.ID, Value: Copy{Record: c.Record, Replicas: c.Replicas, Updated: now}})
		}
		if err := jsonBucket.PutAll(entries); err != nil {
			b.Fatal(err)
		}
	}
	var tBinary, tJSON time.Duration
	for b.Loop() {
		start := time.Now()
		if a := n.svc.storeFrame(m.id(), binary, now); a.Stored != recordsPerFrame {
			b.Fatalf("%+v", a)
		}
		tBinary += time.Since(start)
		start = time.Now()
		storeJSON()
		tJSON += time.Since(start)
	}
	b.ReportMetric(float64(tBinary.Microseconds())/float64(b.N), "µs/frame")
	b.ReportMetric(float64(tJSON.Microseconds())/float64(b.N), "json_µs/frame")
	b.ReportMetric(float64(tBinary)/float64(tJSON), "binary_vs_json")
}
