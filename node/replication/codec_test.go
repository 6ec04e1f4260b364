package replication

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
)

func testCopy(t *testing.T) Copy {
	t.Helper()
	now := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	js, err := spec.Parse([]byte(`{"name": "x", "tasks": [{"name": "a", "command": ["true"], "replicas": 2}]}`), now)
	if err != nil {
		t.Fatal(err)
	}
	rec := market.JobRecord{ID: "j-0123", Spec: *js, Manager: "12D3KooWManager", Submitted: now, State: market.JobRunning,
		Tasks: []market.TaskRecord{
			{Key: market.TaskKey{Job: "j-0123", Task: "a"}, State: market.TaskRunning, Node: "12D3KooWExec", Epoch: 2, Attempts: 1, Started: now,
				History: []market.AttemptRecord{{Attempt: 1, Epoch: 2, Node: "12D3KooWExec", State: market.TaskRunning, Awarded: now}}},
			{Key: market.TaskKey{Job: "j-0123", Task: "a", Replica: 1}, State: market.TaskWaiting},
		}}
	return Copy{Record: rec, Replicas: []market.NodeID{"12D3KooWOne", "12D3KooWTwo"}, Updated: now.Add(time.Second)}
}

func copyJSON(t *testing.T, r Copy) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReplicaRecordCodec(t *testing.T) {
	r := testCopy(t)
	b, err := EncodeCopy(r)
	if err != nil {
		t.Fatal(err)
	}
	js := copyJSON(t, r)
	if len(b) >= len(js) {
		t.Fatalf("stored copy %d bytes, JSON %d", len(b), len(js))
	}
	var got Copy
	if err := DecodeCopy(b, &got); err != nil {
		t.Fatal(err)
	}
	if have := copyJSON(t, got); !bytes.Equal(have, js) {
		t.Fatalf("copy changed:\nwant %s\nhave %s", js, have)
	}
}

func TestReplicaRecordCodecBadInput(t *testing.T) {
	good, err := EncodeCopy(testCopy(t))
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(good)
	damaged[len(damaged)/2] ^= 1
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"pre-release binary", []byte{oldCopyMagic, 1, 0}, "pre-release build"},
		{"pre-release JSON", copyJSON(t, testCopy(t)), "pre-release build"},
		{"garbage", []byte("<xml/>"), "checksum does not match"},
		{"damaged", damaged, "checksum does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Copy{Replicas: []market.NodeID{"kept"}}
			err := DecodeCopy(c.data, &r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if len(r.Replicas) != 1 || r.Replicas[0] != "kept" {
				t.Fatalf("a failed decode changed the replica: %+v", r)
			}
		})
	}
	for n := range len(good) {
		var r Copy
		if DecodeCopy(good[:n], &r) == nil {
			t.Fatalf("copy cut to %d of %d bytes decoded without error", n, len(good))
		}
	}
}
