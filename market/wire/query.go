package wire

import (
	"encoding/json"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/market/wire/pb"
)

// Query kinds.
const (
	// QueryStatus asks for a job's record; the reply body is the JSON of
	// a market.JobRecord.
	QueryStatus = "status"
	// QueryLogs asks for a task attempt's output.
	QueryLogs = "logs"
	// QueryCancel asks the job's manager to cancel it; the reply has no
	// body.
	QueryCancel = "cancel"
	// QueryJobs asks for the jobs the answerer manages, as rows (the
	// cluster-wide list); Job is empty. The reply body is
	// {"jobs": [row...], "truncated": bool} (docs/protocol.md).
	QueryJobs = "jobs"
	// QueryManager asks who manages a job, as the answerer knows it: the
	// answerer itself, or the manager of the copy of the job's record it
	// holds. The reply body is {"manager": NODE}. A node asks it of the
	// peers closest to a ticket's job ID before it accepts the ticket.
	QueryManager = "manager"
	// QueryAcct asks for the accounting records (market/acct) the
	// answerer keeps that the asker may see, ending at or after From
	// (Unix nanoseconds), of job Job when it is set. The reply body is
	// {"records": [record...], "next": NANOS, "more": bool}: ask again
	// from next while more (docs/protocol.md).
	QueryAcct = "acct"
)

// Query asks a peer about a job it manages or a task attempt it ran.
type Query struct {
	// Kind is QueryStatus, QueryLogs, QueryCancel or QueryJobs.
	Kind string
	// Job is the job ID; required but for QueryJobs, where it is empty.
	Job string
	// Task is the task name; required for QueryLogs, empty otherwise.
	Task string
	// Replica is the replica index for QueryLogs, 0..MaxReplica.
	Replica int32
	// Attempt is the attempt number for QueryLogs; 0 means the latest.
	Attempt int32
	// From is the first log chunk sequence number wanted for QueryLogs;
	// 0 means from the start.
	From uint64
	// MaxBytes is the most log bytes wanted for QueryLogs,
	// 0..MaxReplyBodyBytes; 0 lets the answerer choose.
	MaxBytes uint32
	// Credential is the asking user's signed request, in a network with
	// an authority (at most MaxCredentialBytes).
	Credential []byte
}

// QueryReply answers a Query.
type QueryReply struct {
	// Found says the answerer holds the job or attempt asked about.
	Found bool
	// Error, when not empty, says why the query failed (at most
	// MaxErrorLen bytes).
	Error string
	// Body is a JSON document, at most MaxReplyBodyBytes, whose schema
	// depends on the query kind (docs/protocol.md); nil when there is none.
	Body []byte
}

// EncodeQuery returns the wire form of a query (a version-1 pb.Query),
// after the checks DecodeQuery applies.
func EncodeQuery(q Query) ([]byte, error) {
	if err := checkQuery(q); err != nil {
		return nil, err
	}
	x := &pb.Query{Version: Version}
	if err := toPB("query", reflect.ValueOf(q), x.ProtoReflect()); err != nil {
		return nil, err
	}
	b, err := marshal.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("wire: query: %w", err)
	}
	if len(b) > MaxQueryBytes {
		return nil, fmt.Errorf("wire: query of %d bytes: %w of %d bytes", len(b), ErrTooLarge, MaxQueryBytes)
	}
	return b, nil
}

// DecodeQuery parses and checks the wire form of a query. It rejects
// input over MaxQueryBytes, malformed input, another version, an unknown
// kind and any field out of its limits; the error names the field.
func DecodeQuery(b []byte) (Query, error) {
	if len(b) > MaxQueryBytes {
		return Query{}, fmt.Errorf("wire: query of %d bytes: %w of %d bytes", len(b), ErrTooLarge, MaxQueryBytes)
	}
	var x pb.Query
	if err := proto.Unmarshal(b, &x); err != nil {
		return Query{}, malformed("query", &x, b, err)
	}
	if x.Version != Version {
		return Query{}, bad("query.version", "%d not supported (want %d)", x.Version, Version)
	}
	var q Query
	if err := fromPB("query", x.ProtoReflect(), reflect.ValueOf(&q).Elem()); err != nil {
		return Query{}, err
	}
	if err := checkQuery(q); err != nil {
		return Query{}, err
	}
	return q, nil
}

// checkQuery checks every field of a query.
func checkQuery(q Query) error {
	switch q.Kind {
	case QueryStatus, QueryLogs, QueryCancel, QueryJobs, QueryManager, QueryAcct:
	case "":
		return bad("query.kind", "required")
	default:
		return bad("query.kind", "unknown kind %s (want %q, %q, %q, %q, %q or %q)", show(q.Kind), QueryStatus, QueryLogs, QueryCancel, QueryJobs, QueryManager, QueryAcct)
	}
	switch q.Kind {
	case QueryJobs:
		if q.Job != "" || q.Task != "" {
			return bad("query.job", "must be empty for %q", QueryJobs)
		}
	case QueryAcct:
		if q.Task != "" {
			return bad("query.task", "must be empty for %q", QueryAcct)
		}
		if q.Job != "" {
			if err := checkJobID("query.job", q.Job); err != nil {
				return err
			}
		}
	default:
		if err := checkJobID("query.job", q.Job); err != nil {
			return err
		}
	}
	if q.Kind == QueryLogs || q.Task != "" {
		if err := checkTaskName("query.task", q.Task); err != nil {
			return err
		}
	}
	if len(q.Credential) > MaxCredentialBytes {
		return bad("query.credential", "%d bytes, over the limit of %d", len(q.Credential), MaxCredentialBytes)
	}
	return firstErr(
		checkRange64("query.replica", int64(q.Replica), 0, MaxReplica),
		checkRange64("query.attempt", int64(q.Attempt), 0, MaxCounter),
		checkRange64("query.max_bytes", int64(q.MaxBytes), 0, MaxReplyBodyBytes),
	)
}

// EncodeQueryReply returns the wire form of a query reply (a version-1
// pb.QueryReply), after the checks DecodeQueryReply applies.
func EncodeQueryReply(r QueryReply) ([]byte, error) {
	if err := checkReply(r); err != nil {
		return nil, err
	}
	x := &pb.QueryReply{Version: Version}
	if err := toPB("query_reply", reflect.ValueOf(r), x.ProtoReflect()); err != nil {
		return nil, err
	}
	b, err := marshal.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("wire: query_reply: %w", err)
	}
	if len(b) > MaxQueryReplyBytes {
		return nil, fmt.Errorf("wire: query reply of %d bytes: %w of %d bytes", len(b), ErrTooLarge, MaxQueryReplyBytes)
	}
	return b, nil
}

// DecodeQueryReply parses and checks the wire form of a query reply. It
// rejects input over MaxQueryReplyBytes, malformed input, another
// version, an error text over MaxErrorLen and a body over
// MaxReplyBodyBytes or not valid JSON; the error names the field. An
// empty body comes back nil.
func DecodeQueryReply(b []byte) (QueryReply, error) {
	if len(b) > MaxQueryReplyBytes {
		return QueryReply{}, fmt.Errorf("wire: query reply of %d bytes: %w of %d bytes", len(b), ErrTooLarge, MaxQueryReplyBytes)
	}
	var x pb.QueryReply
	if err := proto.Unmarshal(b, &x); err != nil {
		return QueryReply{}, malformed("query reply", &x, b, err)
	}
	if x.Version != Version {
		return QueryReply{}, bad("query_reply.version", "%d not supported (want %d)", x.Version, Version)
	}
	var r QueryReply
	if err := fromPB("query_reply", x.ProtoReflect(), reflect.ValueOf(&r).Elem()); err != nil {
		return QueryReply{}, err
	}
	if err := checkReply(r); err != nil {
		return QueryReply{}, err
	}
	return r, nil
}

// checkReply checks every field of a query reply.
func checkReply(r QueryReply) error {
	if err := checkBytes("query_reply.error", r.Error, MaxErrorLen); err != nil {
		return err
	}
	switch {
	case len(r.Body) > MaxReplyBodyBytes:
		return bad("query_reply.body", "%d bytes, over the limit of %d", len(r.Body), MaxReplyBodyBytes)
	case len(r.Body) > 0 && !json.Valid(r.Body):
		return bad("query_reply.body", "not a valid JSON document")
	}
	return nil
}
