package market

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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
// reason with non-ASCII text, times with and without nanoseconds, one in
// another zone, and the zero times JSON writes and omits.
func codecRecord(t testing.TB) JobRecord {
	t.Helper()
	now := time.Date(2026, 11, 30, 9, 30, 3, 205999786, time.UTC)
	js, err := spec.Parse([]byte(codecSpec), now)
	if err != nil {
		t.Fatal(err)
	}
	const a, b, c = NodeID("12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"), NodeID("12D3KooWB"), NodeID("12D3KooWC")
	j := newJobRecord("j-0123456789abcdef", *js, a, now)
	j.State = JobRunning
	for i := range j.Tasks {
		tr := &j.Tasks[i]
		switch i % 3 {
		case 0:
			tr.State, tr.Node, tr.Epoch, tr.Attempts = TaskSucceeded, b, uint64(i+1), 1
			tr.Started, tr.Finished = now.Add(time.Second), now.Add(time.Minute)
			tr.History = []AttemptRecord{{Attempt: 1, Epoch: uint64(i + 1), Node: b, State: TaskSucceeded, Awarded: now, Started: now.Add(time.Second), Finished: now.Add(time.Minute)}}
			tr.Outputs = &DataRef{Manifest: strings.Repeat("ab", 32), Bytes: int64(i) << 20, Holders: []NodeID{b, "12D3KooWholder"}}
		case 1:
			tr.State, tr.Node, tr.Epoch, tr.Attempts, tr.Failures = TaskRunning, c, 7, 2, 1
			tr.Started, tr.LeaseUntil = now.Add(2*time.Second), now.Add(time.Hour).In(time.FixedZone("CEST", 2*3600))
			tr.NotBefore = time.Unix(1_800_000_000, 0).UTC()
			tr.History = []AttemptRecord{
				{Attempt: 1, Epoch: 3, Node: a, State: TaskFailed, ExitCode: -1, Reason: "killed: Speicher überschritten ✗", Awarded: now},
				{Attempt: 2, Epoch: 7, Node: c, State: TaskRunning, Awarded: now.Add(time.Second)},
			}
		default:
			tr.Reason, tr.ExitCode = "waiting for train", 137
			tr.Key.Job = "j-other" // never so in practice; the format keeps it
		}
	}
	return j
}

// viaJSON is what a record looks like after the JSON round trip records
// used to take through the store: the reference for the binary one.
func viaJSON(t testing.TB, j JobRecord) []byte {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJobRecordCodecRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rec  func(testing.TB) JobRecord
	}{
		{"mid-life record", codecRecord},
		{"fresh record", func(t testing.TB) JobRecord {
			js, err := spec.Parse([]byte(`{"name": "x", "tasks": [{"name": "t", "command": ["true"]}]}`), time.Unix(0, 1))
			if err != nil {
				t.Fatal(err)
			}
			return newJobRecord("j-1", *js, "n", time.Unix(0, 1))
		}},
		{"finished record, no tasks", func(testing.TB) JobRecord {
			return JobRecord{ID: "j-2", Manager: "m", State: JobFailed, Reason: "invalid", Finished: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Tasks: []TaskRecord{}}
		}},
		{"signed job", func(testing.TB) JobRecord {
			return JobRecord{ID: "j-4", Manager: "m", State: JobRunning, Owner: "alice", Ticket: []byte{0xAE, 1, 2, 3}, Tasks: []TaskRecord{}}
		}},
		{"times far from now", func(testing.TB) JobRecord {
			return JobRecord{ID: "j-3", Submitted: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
				Tasks: []TaskRecord{{Key: TaskKey{Job: "j-3", Task: "t"}, Ready: time.Date(1066, 10, 14, 9, 0, 0, 0, time.UTC)}}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := c.rec(t)
			b, err := EncodeJobRecord(j)
			if err != nil {
				t.Fatal(err)
			}
			var got JobRecord
			if err := DecodeJobRecord(b, &got); err != nil {
				t.Fatal(err)
			}
			if want, have := viaJSON(t, j), viaJSON(t, got); !bytes.Equal(want, have) {
				t.Fatalf("binary round trip changed the record:\nwant %s\nhave %s", want, have)
			}
			// Decoded times compare equal to the originals, and the zero
			// ones are zero (the market tests IsZero).
			if !got.Submitted.Equal(j.Submitted) || got.Finished.IsZero() != j.Finished.IsZero() {
				t.Fatalf("times: submitted %v → %v, finished %v → %v", j.Submitted, got.Submitted, j.Finished, got.Finished)
			}
			for i := range j.Tasks {
				if got.Tasks[i].Started.IsZero() != j.Tasks[i].Started.IsZero() || !got.Tasks[i].LeaseUntil.Equal(j.Tasks[i].LeaseUntil) {
					t.Fatalf("task %d times differ", i)
				}
			}
			// Encoding is deterministic.
			again, err := EncodeJobRecord(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encoding the decoded record gave other bytes (%v)", err)
			}
		})
	}
}

// The binary record is a fraction of the JSON one: the point of it.
func TestJobRecordCodecSize(t *testing.T) {
	j := codecRecord(t)
	b, err := EncodeJobRecord(j)
	if err != nil {
		t.Fatal(err)
	}
	js := viaJSON(t, j)
	specJSON := viaJSON(t, JobRecord{Spec: j.Spec})
	// Everything but the spec (which stays JSON) at most a third.
	if rest, jsonRest := len(b)-len(specJSON), len(js)-len(specJSON); 3*rest > jsonRest {
		t.Fatalf("binary record %d bytes, JSON %d; without the spec %d against %d", len(b), len(js), rest, jsonRest)
	}
}

// TestDecodeJobRecordVersion1: a record stored by the release before
// owners and tickets (version 1, the same fields without them) still
// reads.
func TestDecodeJobRecordVersion1(t *testing.T) {
	j := codecRecord(t)
	for i := range j.Tasks {
		j.Tasks[i].Outputs = nil // version 4's
	}
	b, err := encodeJobRecord(j, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Versions 2 and 3 add the owner, the ticket's form and the ticket,
	// empty here, as three zero bytes after the finish time: drop them and
	// mark version 1.
	var e recEncoder
	e.b = append(e.b, jobRecordMagic, 1)
	e.str(j.ID)
	spec, _ := json.Marshal(j.Spec)
	e.bytes(spec)
	e.str(string(j.Manager))
	e.time(j.Submitted)
	e.str(string(j.State))
	e.str(j.Reason)
	e.time(j.Finished)
	rest := b[len(e.b)+3:] // the owner, ticket form and ticket length follow the same prefix
	v1 := append(e.b, rest...)
	var got JobRecord
	if err := DecodeJobRecord(v1, &got); err != nil {
		t.Fatalf("version 1 record: %v", err)
	}
	j.Origin, j.EpochTag = "", 0 // version 5 added them
	if want, have := viaJSON(t, j), viaJSON(t, got); !bytes.Equal(want, have) {
		t.Fatalf("version 1 record read differently:\nwant %s\nhave %s", want, have)
	}
}

func TestDecodeJobRecordReadsJSON(t *testing.T) {
	j := codecRecord(t)
	js := viaJSON(t, j)
	var got JobRecord
	if err := DecodeJobRecord(js, &got); err != nil {
		t.Fatal(err)
	}
	if have := viaJSON(t, got); !bytes.Equal(have, js) {
		t.Fatalf("JSON record read back differs:\nwant %s\nhave %s", js, have)
	}
}

func TestDecodeJobRecordBadInput(t *testing.T) {
	good, err := EncodeJobRecord(codecRecord(t))
	if err != nil {
		t.Fatal(err)
	}
	withVersion := func(v byte) []byte { b := bytes.Clone(good); b[1] = v; return b }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"not JSON either", []byte("{not json"), "neither binary nor JSON"},
		{"future version", withVersion(6), "encoding version 6"},
		{"version 0", withVersion(0), "encoding version 0"},
		{"trailing bytes", append(bytes.Clone(good), 0), "bytes after the record"},
		{"magic only", []byte{jobRecordMagic}, "version: truncated"},
		{"huge task count", []byte{jobRecordMagic, 1, 0, 4, 'n', 'u', 'l', 'l', 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, "more than the"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := JobRecord{ID: "kept"}
			err := DecodeJobRecord(c.data, &j)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if j.ID != "kept" {
				t.Fatalf("a failed decode changed the record: %+v", j)
			}
		})
	}
	// Every truncation of a good record is an error, never a panic.
	for n := range len(good) {
		var j JobRecord
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
	f.Add(viaJSON(f, codecRecord(f)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var j JobRecord
		if DecodeJobRecord(data, &j) != nil {
			return
		}
		b, err := EncodeJobRecord(j)
		if err != nil {
			return // a spec JSON cannot re-encode (not from this encoder)
		}
		var k JobRecord
		if err := DecodeJobRecord(b, &k); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !bytes.Equal(viaJSON(t, j), viaJSON(t, k)) {
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
	now := time.Now()
	j := newJobRecord("j-0123456789abcdef", *js, "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo", now)
	for i := range j.Tasks {
		tr := &j.Tasks[i]
		tr.State, tr.Node, tr.Started, tr.Finished, tr.LeaseUntil = TaskSucceeded, j.Manager, now, now, now
		tr.History = []AttemptRecord{{Attempt: 1, Node: j.Manager, State: TaskSucceeded, Awarded: now, Started: now, Finished: now}}
	}
	jsonBytes, _ := json.Marshal(j)
	binBytes, _ := EncodeJobRecord(j)
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			out, _ := json.Marshal(j)
			var k JobRecord
			if err := json.Unmarshal(out, &k); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(jsonBytes)), "bytes/record")
	})
	b.Run("binary", func(b *testing.B) {
		for b.Loop() {
			out, _ := EncodeJobRecord(j)
			var k JobRecord
			if err := DecodeJobRecord(out, &k); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(binBytes)), "bytes/record")
	})
}
