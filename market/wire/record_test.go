package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
)

// codecSpec has a field of each kind the spec's JSON carries: a DAG,
// durations, a deadline, GPU counts and shares, devices, labels, env.
const codecSpec = `{"name": "codec", "type": "training", "priority": 7, "deadline": "30m", "tasks": [
  {"name": "prep", "command": ["sh", "-c", "echo prep"], "resources": {"cpu": 2, "memory": "4GiB"}},
  {"name": "train", "after": ["prep"], "command": ["python3", "train.py"], "env": {"EPOCHS": "10"},
   "resources": {"cpu": 8, "gpu": {"count": 1, "memory": "40GiB", "model": "A100"}, "labels": {"zone": "a"},
                 "devices": [{"kind": "fpga", "count": 1}]},
   "estimate": "45m", "checkpoint": {"interval": "60s"}, "retries": 5, "replicas": 3, "gang": true},
  {"name": "eval", "after": ["train"], "command": ["true"], "resources": {"cpu": "500m", "gpu": 0.25}}]}`

// codecRecord is a job record in the middle of its life: finished,
// running, failed and retried replicas, attempts on several nodes, a
// reason with non-ASCII text, outputs, times with and without
// nanoseconds and the zero times.
func codecRecord(t testing.TB) market.JobRecord {
	t.Helper()
	now := time.Date(2026, 11, 30, 9, 30, 3, 205999786, time.UTC)
	js, err := spec.Parse([]byte(codecSpec), now)
	if err != nil {
		t.Fatal(err)
	}
	const a, b, c = market.NodeID("12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"), market.NodeID("12D3KooWB"), market.NodeID("12D3KooWC")
	j := market.JobRecord{ID: "j-0123456789abcdef", Spec: *js, Manager: a, Origin: b, EpochTag: 3, Submitted: now, State: market.JobRunning}
	for _, ts := range js.Tasks {
		for r := range max(ts.Replicas, 1) {
			j.Tasks = append(j.Tasks, market.TaskRecord{Key: market.TaskKey{Job: j.ID, Task: ts.Name, Replica: r}, State: market.TaskWaiting})
		}
	}
	for i := range j.Tasks {
		tr := &j.Tasks[i]
		switch i % 3 {
		case 0:
			tr.State, tr.Node, tr.Epoch, tr.Attempts = market.TaskSucceeded, b, uint64(i+1), 1
			tr.Started, tr.Finished = now.Add(time.Second), now.Add(time.Minute)
			tr.History = []market.AttemptRecord{{Attempt: 1, Epoch: uint64(i + 1), Node: b, State: market.TaskSucceeded, Awarded: now, Started: now.Add(time.Second), Finished: now.Add(time.Minute)}}
			tr.Outputs = &market.DataRef{Manifest: strings.Repeat("ab", 32), Bytes: int64(i) << 20, Holders: []market.NodeID{b, "12D3KooWholder"}}
		case 1:
			tr.State, tr.Node, tr.Epoch, tr.Attempts, tr.Failures = market.TaskRunning, c, 7, 2, 1
			tr.Started, tr.LeaseUntil = now.Add(2*time.Second), now.Add(time.Hour)
			tr.NotBefore = time.Unix(1_800_000_000, 0).UTC()
			tr.History = []market.AttemptRecord{
				{Attempt: 1, Epoch: 3, Node: a, State: market.TaskFailed, ExitCode: -1, Reason: "killed: Speicher überschritten ✗", Awarded: now},
				{Attempt: 2, Epoch: 7, Node: c, State: market.TaskRunning, Awarded: now.Add(time.Second)},
			}
		default:
			tr.Reason, tr.ExitCode = "waiting for train", 137
			tr.Key.Job = "j-other" // never so in practice; the format keeps it
		}
	}
	return j
}

func recordJSON(t testing.TB, j market.JobRecord) []byte {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJobRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rec  func(testing.TB) market.JobRecord
	}{
		{"mid-life record", codecRecord},
		{"fresh record", func(t testing.TB) market.JobRecord {
			js, err := spec.Parse([]byte(`{"name": "x", "tasks": [{"name": "t", "command": ["true"]}]}`), time.Unix(0, 1))
			if err != nil {
				t.Fatal(err)
			}
			return market.JobRecord{ID: "j-1", Spec: *js, Manager: "n", Submitted: time.Unix(0, 1).UTC(), State: market.JobPending,
				Tasks: []market.TaskRecord{{Key: market.TaskKey{Job: "j-1", Task: "t"}, State: market.TaskWaiting}}}
		}},
		{"finished record, no tasks", func(testing.TB) market.JobRecord {
			return market.JobRecord{ID: "j-2", Manager: "m", State: market.JobFailed, Reason: "invalid", Finished: time.Unix(1, 1).UTC()}
		}},
		{"signed job whose ticket is not the spec's", func(testing.TB) market.JobRecord {
			return market.JobRecord{ID: "j-4", Manager: "m", State: market.JobRunning, Owner: "alice", Ticket: []byte{0xAE, 1, 2, 3}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := c.rec(t)
			b, err := EncodeJobRecord(j)
			if err != nil {
				t.Fatal(err)
			}
			var got market.JobRecord
			if err := DecodeJobRecord(b, &got); err != nil {
				t.Fatal(err)
			}
			if want, have := recordJSON(t, j), recordJSON(t, got); !bytes.Equal(want, have) {
				t.Fatalf("round trip changed the record:\nwant %s\nhave %s", want, have)
			}
			again, err := EncodeJobRecord(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encoding the decoded record gave other bytes (%v)", err)
			}
		})
	}
}

// TestJobRecordTimes: times come back equal and in UTC, and one a record
// cannot hold is refused by name when it is written, not stored wrong.
func TestJobRecordTimes(t *testing.T) {
	j := codecRecord(t)
	cest := time.FixedZone("CEST", 2*3600)
	j.Tasks[1].LeaseUntil = j.Tasks[1].LeaseUntil.In(cest)
	b, err := EncodeJobRecord(j)
	if err != nil {
		t.Fatal(err)
	}
	var got market.JobRecord
	if err := DecodeJobRecord(b, &got); err != nil {
		t.Fatal(err)
	}
	if lu := got.Tasks[1].LeaseUntil; !lu.Equal(j.Tasks[1].LeaseUntil) || lu.Location() != time.UTC {
		t.Fatalf("lease %v came back as %v", j.Tasks[1].LeaseUntil, lu)
	}
	j.Tasks[0].Ready = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	if _, err := EncodeJobRecord(j); err == nil || !strings.Contains(err.Error(), "job_record.tasks[0].ready_unix_nano") {
		t.Fatalf("a time past 2262 encoded: %v", err)
	}
}

// TestJobRecordSize: the record is a fraction of its JSON (the store
// copies each version into its log, memtable and tables).
func TestJobRecordSize(t *testing.T) {
	j := codecRecord(t)
	b, err := EncodeJobRecord(j)
	if err != nil {
		t.Fatal(err)
	}
	js := recordJSON(t, j)
	specJSON := recordJSON(t, market.JobRecord{Spec: j.Spec})
	// Everything but the spec (which stays JSON) at most half.
	if rest, jsonRest := len(b)-len(specJSON), len(js)-len(specJSON); 2*rest > jsonRest {
		t.Fatalf("record %d bytes, JSON %d; without the spec %d against %d", len(b), len(js), rest, jsonRest)
	}
}

func TestDecodeJobRecordBadInput(t *testing.T) {
	good, err := EncodeJobRecord(codecRecord(t))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	oldVersion, err := func() ([]byte, error) {
		var x = bytes.Clone(good)
		x[1] = 2 // field 1 (version) is first: 0x08, then its value
		return x, nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"pre-release binary", []byte{0xA7, 5, 0}, "pre-release build (binary encoding 0xA7)"},
		{"pre-release JSON", recordJSON(t, codecRecord(t)), "pre-release build (JSON)"},
		{"damaged", flipped, "checksum does not match"},
		{"trailing bytes", append(bytes.Clone(good), 0), "checksum does not match"},
		{"other version, checksum wrong too", oldVersion, "checksum does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := market.JobRecord{ID: "kept"}
			err := DecodeJobRecord(c.data, &j)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if j.ID != "kept" {
				t.Fatalf("a failed decode changed the record: %+v", j)
			}
		})
	}
	// Every truncation of a good record is an error, never a panic or a
	// record with fields missing.
	for n := range len(good) {
		var j market.JobRecord
		if err := DecodeJobRecord(good[:n], &j); err == nil {
			t.Fatalf("record cut to %d of %d bytes decoded without error", n, len(good))
		}
	}
}

// FuzzDecodeJobRecord: no input panics the decoder, and what it accepts
// encodes back to a record that decodes the same.
func FuzzDecodeJobRecord(f *testing.F) {
	good, err := EncodeJobRecord(codecRecord(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		var j market.JobRecord
		if DecodeJobRecord(data, &j) != nil {
			return
		}
		b, err := EncodeJobRecord(j)
		if err != nil {
			return
		}
		var k market.JobRecord
		if err := DecodeJobRecord(b, &k); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !bytes.Equal(recordJSON(t, j), recordJSON(t, k)) {
			t.Fatalf("record changed through a second round trip")
		}
	})
}

func BenchmarkJobRecordCodec(b *testing.B) {
	// The placement benchmark's job: 25 one-replica tasks, all run.
	tasks := make([]string, 25)
	for i := range tasks {
		tasks[i] = fmt.Sprintf(`{"name": "t%03d", "command": ["true"], "resources": {"cpu": "100m"}}`, i)
	}
	js, err := spec.Parse([]byte(`{"name": "x", "tasks": [`+strings.Join(tasks, ",")+`]}`), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	mgr := market.NodeID("12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo")
	j := market.JobRecord{ID: "j-0123456789abcdef", Spec: *js, Manager: mgr, Submitted: now, State: market.JobSucceeded}
	for _, ts := range js.Tasks {
		j.Tasks = append(j.Tasks, market.TaskRecord{Key: market.TaskKey{Job: j.ID, Task: ts.Name}, State: market.TaskSucceeded, Node: mgr,
			Started: now, Finished: now, LeaseUntil: now,
			History: []market.AttemptRecord{{Attempt: 1, Node: mgr, State: market.TaskSucceeded, Awarded: now, Started: now, Finished: now}}})
	}
	jsonBytes, _ := json.Marshal(j)
	pbBytes, _ := EncodeJobRecord(j)
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			out, _ := json.Marshal(j)
			var k market.JobRecord
			if err := json.Unmarshal(out, &k); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(jsonBytes)), "bytes/record")
	})
	b.Run("protobuf", func(b *testing.B) {
		for b.Loop() {
			out, _ := EncodeJobRecord(j)
			var k market.JobRecord
			if err := DecodeJobRecord(out, &k); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(pbBytes)), "bytes/record")
	})
}
