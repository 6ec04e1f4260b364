package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/market/wire/pb"
)

func TestQueryRoundTrip(t *testing.T) {
	tests := []Query{
		{Kind: QueryStatus, Job: "01J9Z3K7Q8-train"},
		{Kind: QueryLogs, Job: "job-1", Task: "train.step-1", Replica: 3, Attempt: 2, From: 1 << 40, MaxBytes: MaxReplyBodyBytes},
		{Kind: QueryLogs, Job: "job-1", Task: "t"},
		{Kind: QueryCancel, Job: "job-1"},
		{Kind: QueryJobs, Credential: []byte("token")},
	}
	for _, q := range tests {
		b, err := EncodeQuery(q)
		if err != nil {
			t.Fatalf("EncodeQuery(%+v): %v", q, err)
		}
		got, err := DecodeQuery(b)
		if err != nil {
			t.Fatalf("DecodeQuery(%+v): %v", q, err)
		}
		if !reflect.DeepEqual(got, q) {
			t.Fatalf("query round trip: got %+v, want %+v", got, q)
		}
	}
}

func TestQueryReplyRoundTrip(t *testing.T) {
	tests := []QueryReply{
		{},
		{Found: true, Body: []byte(`{"id":"job-1","state":"running","tasks":[]}`)},
		{Found: true, Body: []byte(`{"data":"line\n","next":7,"done":false}`)},
		{Found: true, Error: "market: job job-1 is already finished"},
		{Error: "wire: query.kind: unknown kind \"x\""},
		{Found: true, Body: []byte(`"` + strings.Repeat("a", MaxReplyBodyBytes-2) + `"`)},
	}
	for _, r := range tests {
		b, err := EncodeQueryReply(r)
		if err != nil {
			t.Fatalf("EncodeQueryReply: %v", err)
		}
		if len(b) > MaxQueryReplyBytes {
			t.Fatalf("reply of %d bytes", len(b))
		}
		got, err := DecodeQueryReply(b)
		if err != nil {
			t.Fatalf("DecodeQueryReply: %v", err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("reply round trip: got %+v, want %+v", got.Found, r.Found)
		}
	}
}

func marshalPB(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeQueryRejects(t *testing.T) {
	ok := func(f func(*pb.Query)) []byte {
		q := &pb.Query{Version: Version, Kind: QueryLogs, Job: "j", Task: "t"}
		f(q)
		return marshalPB(t, q)
	}
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"over the size limit", make([]byte, MaxQueryBytes+1), "over the size limit"},
		{"malformed", []byte{0x12, 0x05, 'a'}, "malformed query: kind"},
		{"wrong version", ok(func(q *pb.Query) { q.Version = 9 }), "query.version: 9 not supported"},
		{"no kind", ok(func(q *pb.Query) { q.Kind = "" }), "query.kind: required"},
		{"unknown kind", ok(func(q *pb.Query) { q.Kind = "reboot" }), `query.kind: unknown kind "reboot"`},
		{"empty job", ok(func(q *pb.Query) { q.Job = "" }), "query.job: required"},
		{"jobs naming a job", ok(func(q *pb.Query) { q.Kind, q.Task = QueryJobs, "" }), `query.job: must be empty for "jobs"`},
		{"long job", ok(func(q *pb.Query) { q.Job = strings.Repeat("j", MaxJobIDLen+1) }), "query.job: 129 bytes"},
		{"logs without task", ok(func(q *pb.Query) { q.Task = "" }), "query.task: required"},
		{"bad task", ok(func(q *pb.Query) { q.Task = "a/b" }), "query.task: invalid task name"},
		{"bad task in status", ok(func(q *pb.Query) { q.Kind, q.Task = QueryStatus, ".." }), "query.task: invalid task name"},
		{"negative replica", ok(func(q *pb.Query) { q.Replica = -1 }), "query.replica: negative value -1"},
		{"negative attempt", ok(func(q *pb.Query) { q.Attempt = -1 }), "query.attempt: negative value -1"},
		{"max bytes too big", ok(func(q *pb.Query) { q.MaxBytes = MaxReplyBodyBytes + 1 }), "query.max_bytes: 16777217 out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := DecodeQuery(tc.input)
			if err == nil {
				t.Fatalf("DecodeQuery accepted %+v", q)
			}
			if !strings.HasPrefix(err.Error(), "wire: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	if _, err := EncodeQuery(Query{Kind: "logs", Job: "j"}); err == nil || !strings.Contains(err.Error(), "query.task: required") {
		t.Fatalf("EncodeQuery of a bad query: %v", err)
	}
}

func TestDecodeQueryReplyRejects(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"over the size limit", make([]byte, MaxQueryReplyBytes+1), "over the size limit"},
		{"malformed", []byte{0x1a, 0x02, 0xc3, 0x28}, "malformed query reply: error: invalid UTF-8"},
		{"wrong version", marshalPB(t, &pb.QueryReply{Version: 0, Found: true}), "query_reply.version: 0 not supported"},
		{"long error", marshalPB(t, &pb.QueryReply{Version: 1, Error: strings.Repeat("e", MaxErrorLen+1)}), "query_reply.error: 4097 bytes"},
		{"body too big", marshalPB(t, &pb.QueryReply{Version: 1, Body: make([]byte, MaxReplyBodyBytes+1)}), "query_reply.body: 16777217 bytes"},
		{"body not JSON", marshalPB(t, &pb.QueryReply{Version: 1, Found: true, Body: []byte("{")}), "query_reply.body: not a valid JSON document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeQueryReply(tc.input)
			if err == nil {
				t.Fatalf("DecodeQueryReply accepted %+v", r.Found)
			}
			if !strings.HasPrefix(err.Error(), "wire: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	_, err := EncodeQueryReply(QueryReply{Found: true, Body: make([]byte, MaxReplyBodyBytes+1)})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "query_reply.body" {
		t.Fatalf("EncodeQueryReply of a big body: %v", err)
	}
}
