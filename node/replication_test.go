package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire"
)

// testRecord is a valid job record managed by m.
func testRecord(t testing.TB, id string, m *Node) market.JobRecord {
	t.Helper()
	js, err := spec.Parse([]byte(`{"name": "`+id+`", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "100m"}}]}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return market.JobRecord{ID: id, Spec: *js, Manager: market.NodeID(m.ID().String()), State: market.JobPending}
}

// encodeAll encodes msgs for pushRecords.
func encodeAll(t *testing.T, msgs []jobReplicaMsg) []encodedRecord {
	t.Helper()
	var out []encodedRecord
	for _, m := range msgs {
		e, err := encodeRecord(m.Record, m.Replicas)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// replicaOf reads the replica of job id that n holds.
func replicaOf(t *testing.T, n *Node, id string) (replicaRecord, bool) {
	t.Helper()
	r, ok, err := n.replicas.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

// withoutProtocols removes protos from b's handlers, as a node of an
// earlier release never had them, and waits until identify has told a.
func withoutProtocols(t *testing.T, a, b *Node, protos ...protocol.ID) {
	t.Helper()
	for _, p := range protos {
		b.host.RemoveStreamHandler(p)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := a.host.Peerstore().SupportsProtocols(b.ID(), protos...)
		if err == nil && len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a still lists %v for b: %v", ps, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRecordStream: records reach a peer in one frame over the
// long-lived stream of the newest version both speak, which later pushes
// reuse; a record whose manager is not the sender is refused alone, by
// name, while the others of its frame are stored. Version 3 between
// nodes of this release; version 2 with a peer of the release before.
func TestRecordStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		without []protocol.ID
		want    protocol.ID
	}{
		{"v3", nil, JobRecordProtocolV3},
		{"v2 peer", []protocol.ID{JobRecordProtocolV3}, JobRecordProtocolV2},
	} {
		t.Run(tc.name, func(t *testing.T) { testRecordStream(t, tc.without, tc.want) })
	}
}

func testRecordStream(t *testing.T, without []protocol.ID, want protocol.ID) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	if len(without) > 0 {
		withoutProtocols(t, a, b, without...)
	}
	ctx := context.Background()
	var msgs []jobReplicaMsg
	for i := range 3 {
		msgs = append(msgs, jobReplicaMsg{Record: testRecord(t, fmt.Sprintf("j-v2-%d", i), a), Replicas: []string{b.ID().String()}})
	}
	forged := testRecord(t, "j-forged", b) // claims b manages it; a sends it
	msgs = append(msgs, jobReplicaMsg{Record: forged})
	stored, err := a.pushRecords(ctx, b.ID(), encodeAll(t, msgs))
	if err == nil || !strings.Contains(err.Error(), "j-forged") {
		t.Fatalf("push with a forged record: err %v, want it refused by name", err)
	}
	for i := range 3 {
		id := fmt.Sprintf("j-v2-%d", i)
		if !stored[id] {
			t.Fatalf("%s not acknowledged: %v", id, stored)
		}
		if r, ok := replicaOf(t, b, id); !ok || r.Record.Manager != market.NodeID(a.ID().String()) || len(r.Replicas) != 1 {
			t.Fatalf("%s on b: %v %+v", id, ok, r)
		}
	}
	if _, ok := replicaOf(t, b, "j-forged"); ok || stored["j-forged"] {
		t.Fatal("forged record stored")
	}
	link := a.recLinks.link(b.ID())
	link.mu.Lock()
	s := link.s
	link.mu.Unlock()
	if s == nil || s.Protocol() != want {
		t.Fatalf("no %s stream kept: %v", want, s)
	}
	// The next push goes over the same stream.
	if n := a.replicate(ctx, testRecord(t, "j-v2-again", a)); n < 1 {
		t.Fatalf("replicate stored on %d peers", n)
	}
	link.mu.Lock()
	same := link.s == s
	link.mu.Unlock()
	if !same {
		t.Fatal("a second push opened another stream")
	}
	if _, ok := replicaOf(t, b, "j-v2-again"); !ok {
		t.Fatal("second record not on b")
	}
}

// recordAsker opens a job-record stream of version proto from a to b and
// returns a function that sends one request frame on it and reads the
// answer.
func recordAsker(t *testing.T, a, b *Node, proto protocol.ID) func(body []byte) recordBatchReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := a.host.NewStream(ctx, b.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r, w := bufio.NewReader(s), bufio.NewWriter(s)
	return func(body []byte) recordBatchReply {
		t.Helper()
		if err := wire.WriteFrame(w, body); err != nil || w.Flush() != nil {
			t.Fatal(err)
		}
		b, err := wire.ReadFrame(r, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		var rep recordBatchReply
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
}

// TestRecordStreamV2Malformed: a frame that is not a record batch is
// answered with an error naming the problem, and the stream still serves
// the next frame.
func TestRecordStreamV2Malformed(t *testing.T) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	ask := recordAsker(t, a, b, JobRecordProtocolV2)
	if rep := ask([]byte(`{"records": 7}`)); !strings.Contains(rep.Error, "malformed job records") || rep.Stored != 0 {
		t.Fatalf("malformed frame answered %+v", rep)
	}
	good, _ := json.Marshal(recordBatch{Records: []jobReplicaMsg{{Record: testRecord(t, "j-after", a)}}})
	if rep := ask(good); rep.Error != "" || rep.Stored != 1 {
		t.Fatalf("frame after a malformed one answered %+v", rep)
	}
}

// TestRecordStreamFallsBackToV1: a peer that only speaks version 1 still
// gets every record, each on a stream of its own.
func TestRecordStreamFallsBackToV1(t *testing.T) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	withoutProtocols(t, a, b, JobRecordProtocolV3, JobRecordProtocolV2)
	msgs := []jobReplicaMsg{{Record: testRecord(t, "j-v1-0", a)}, {Record: testRecord(t, "j-v1-1", a)}}
	stored, err := a.pushRecords(context.Background(), b.ID(), encodeAll(t, msgs))
	if err != nil || !stored["j-v1-0"] || !stored["j-v1-1"] {
		t.Fatalf("push to a version-1 peer: %v, stored %v", err, stored)
	}
	for _, id := range []string{"j-v1-0", "j-v1-1"} {
		if _, ok := replicaOf(t, b, id); !ok {
			t.Fatalf("%s not on b", id)
		}
	}
}

// TestRecordFrame: frames of either version hold at most
// recordsPerFrame records and maxJobRecordFrame bytes, at least one
// record each, and decode to the records they say they hold, in order,
// replica sets included.
func TestRecordFrame(t *testing.T) {
	rec := func(i int, reason string) encodedRecord {
		e, err := encodeRecord(market.JobRecord{ID: fmt.Sprintf("j-%d", i), Reason: reason}, []string{"p1", fmt.Sprintf("p-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		both, err := withJSON([]encodedRecord{e})
		if err != nil {
			t.Fatal(err)
		}
		return both[0]
	}
	small := func(i int) encodedRecord { return rec(i, "") }
	big := func(i int) encodedRecord { return rec(i, strings.Repeat("x", maxJobRecordFrame/3)) }
	versions := []struct {
		name   string
		build  func([]encodedRecord) (int, []byte)
		decode func([]byte) ([]jobReplicaMsg, error)
	}{
		{"v2", recordFrame, func(body []byte) ([]jobReplicaMsg, error) {
			var b recordBatch
			err := json.Unmarshal(body, &b)
			return b.Records, err
		}},
		{"v3", recordFrameV3, decodeRecordFrameV3},
	}
	cases := []struct {
		name   string
		recs   []encodedRecord
		frames []int // records per frame
	}{
		{"one", []encodedRecord{small(0)}, []int{1}},
		{"a frame's worth", []encodedRecord{small(0), small(1), small(2), small(3), small(4), small(5), small(6), small(7)}, []int{8}},
		{"split by count", []encodedRecord{small(0), small(1), small(2), small(3), small(4), small(5), small(6), small(7), small(8), small(9)}, []int{8, 2}},
		{"split by bytes", []encodedRecord{big(0), big(1), big(2), big(3)}, []int{2, 2}},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				recs := tc.recs
				var got []int
				next := 0
				for len(recs) > 0 {
					k, body := v.build(recs)
					if k < 1 || len(body) > maxJobRecordFrame {
						t.Fatalf("frame of %d records, %d bytes", k, len(body))
					}
					msgs, err := v.decode(body)
					if err != nil || len(msgs) != k {
						t.Fatalf("frame decodes to %d records (%v), says %d", len(msgs), err, k)
					}
					for _, m := range msgs {
						if want := fmt.Sprintf("j-%d", next); m.Record.ID != want || fmt.Sprint(m.Replicas) != fmt.Sprintf("[p1 p-%d]", next) {
							t.Fatalf("record %s with replicas %v, want %s", m.Record.ID, m.Replicas, want)
						}
						next++
					}
					got = append(got, k)
					recs = recs[k:]
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.frames) {
					t.Fatalf("frames %v, want %v", got, tc.frames)
				}
			})
		}
	}
}

// TestReplicationRetriesShortfall: a record a replica peer could not
// store is sent again with the next batches, so that the peer ends up
// with the job's final record once it can store again, and the retry
// count is dropped once it has.
func TestReplicationRetriesShortfall(t *testing.T) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	b.host.RemoveStreamHandler(JobRecordProtocolV3)
	b.host.RemoveStreamHandler(JobRecordProtocolV2)
	b.host.RemoveStreamHandler(JobRecordProtocol)
	rec := testRecord(t, "j-retry", a)
	rec.State, rec.Finished = market.JobSucceeded, time.Now()
	a.replicateLater(rec)
	tries := func() int {
		a.fo.mu.Lock()
		defer a.fo.mu.Unlock()
		return a.fo.tries["j-retry"]
	}
	deadline := time.Now().Add(10 * time.Second)
	for tries() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no retried batch within 10 s (tries %d)", tries())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := replicaOf(t, b, "j-retry"); ok {
		t.Fatal("b stored the record while it refused job records")
	}
	b.host.SetStreamHandler(JobRecordProtocolV3, b.handleRecordsV3)
	b.host.SetStreamHandler(JobRecordProtocolV2, b.handleRecords)
	b.host.SetStreamHandler(JobRecordProtocol, b.handleRecord)
	for {
		if r, ok := replicaOf(t, b, "j-retry"); ok && r.Record.State == market.JobSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b has no final record within 10 s (tries %d)", tries())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for tries() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("retry count kept after success: %d", tries())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRecordStreamV3Malformed: a version-3 frame that does not decode is
// answered with an error naming the problem, and the stream still serves
// the next frame.
func TestRecordStreamV3Malformed(t *testing.T) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	ask := recordAsker(t, a, b, JobRecordProtocolV3)
	e, err := encodeRecord(testRecord(t, "j-after", a), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, good := recordFrameV3([]encodedRecord{e})
	for _, bad := range []struct {
		name string
		body []byte
		want string
	}{
		{"JSON", []byte(`{"records": []}`), "record count"},
		{"count past the end", []byte{5, 1, 0}, "record count"},
		{"record cut short", good[:len(good)-4], "truncated"},
		{"bytes after the records", append(bytes.Clone(good), 0), "bytes after the 1 records"},
		{"not a job record", []byte{1, 3, 0, 'x', 'y'}, "record 1 of 1: job record"},
	} {
		if rep := ask(bad.body); !strings.Contains(rep.Error, "malformed job records") || !strings.Contains(rep.Error, bad.want) || rep.Stored != 0 {
			t.Fatalf("%s: answered %+v, want an error with %q", bad.name, rep, bad.want)
		}
	}
	if rep := ask(good); rep.Error != "" || rep.Stored != 1 {
		t.Fatalf("frame after malformed ones answered %+v", rep)
	}
	if _, ok := replicaOf(t, b, "j-after"); !ok {
		t.Fatal("j-after not on b")
	}
}
