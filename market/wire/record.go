package wire

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire/pb"
)

// Job records in their one stored form: a pb.JobRecord of version 1, the
// form a manager stores them in and copies them to peers in
// (node/replication). The mapping (convert.go) converts every field but
// the spec and the ticket, which recordHook does: the spec is its JSON
// (the bytes a ticket signs), the ticket stored without them when it
// signs exactly them, and a task's key leaves out the job when it is the
// record's own.

// RecordVersion is the version of the job-record encoding.
const RecordVersion = 1

// pre-release record encodings, refused by name
const (
	oldRecordMagic = 0xA7 // the binary encoding, versions 1 to 5
	oldRecordJSON  = '{'
)

var recordDesc = (&pb.JobRecord{}).ProtoReflect().Descriptor()

func init() {
	hooks[recordDesc.FullName()] = hook{
		to: func(p string, v reflect.Value, m protoreflect.Message) error {
			j := v.Interface().(market.JobRecord)
			return recordTo(p, &j, m.Interface().(*pb.JobRecord))
		},
		from: func(p string, m protoreflect.Message, v reflect.Value) error {
			return recordFrom(p, m.Interface().(*pb.JobRecord), v.Addr().Interface().(*market.JobRecord))
		},
	}
}

// recordTo writes what the mapping leaves to it: the version, the spec,
// the ticket, and the tasks' keys without the record's own job.
func recordTo(_ string, j *market.JobRecord, x *pb.JobRecord) error {
	specJSON, ticket, detached, err := market.DetachTicket(*j)
	if err != nil {
		return err
	}
	x.Version, x.Spec, x.Ticket, x.TicketDetached = RecordVersion, specJSON, ticket, detached
	for _, t := range x.Tasks {
		if t.Key != nil && t.Key.Job == j.ID {
			t.Key.Job = ""
		}
	}
	return nil
}

// recordFrom reads what recordTo wrote.
func recordFrom(p string, x *pb.JobRecord, j *market.JobRecord) error {
	if x.Version != RecordVersion {
		return fmt.Errorf("job record: version %d, this build reads version %d", x.Version, RecordVersion)
	}
	if x.EpochTag >= 1<<market.EpochTagBits {
		return bad(join(p, "epoch_tag"), "%d is not below 2^%d", x.EpochTag, market.EpochTagBits)
	}
	if err := j.AttachTicket(x.Spec, x.Ticket, x.TicketDetached); err != nil {
		return err
	}
	for i := range j.Tasks {
		if j.Tasks[i].Key.Job == "" {
			j.Tasks[i].Key.Job = x.Id
		}
	}
	return nil
}

// EncodeJobRecord encodes j in the job-record encoding, sealed (seal.go).
func EncodeJobRecord(j market.JobRecord) ([]byte, error) {
	var x pb.JobRecord
	if err := ToProto("job_record", j, &x); err != nil {
		return nil, fmt.Errorf("job record %s: %w", j.ID, err)
	}
	return sealed(&x)
}

// DecodeJobRecord decodes a record EncodeJobRecord wrote into j, which a
// failed decode leaves as it was. It names a record of a pre-release
// build as such.
func DecodeJobRecord(b []byte, j *market.JobRecord) error {
	if err := checkRecordForm(b); err != nil {
		return err
	}
	var x pb.JobRecord
	if err := unseal("job record", recordDesc, b); err != nil {
		return err
	}
	if err := proto.Unmarshal(b, &x); err != nil {
		return malformed("job record", &x, b, err)
	}
	var out market.JobRecord
	if err := FromProto("job_record", &x, &out); err != nil {
		return err
	}
	*j = out
	return nil
}

// checkRecordForm refuses an empty record and the forms of pre-release
// builds, which a version-1 record cannot begin with (its first byte is
// field 1's tag, 0x08).
func checkRecordForm(b []byte) error {
	switch {
	case len(b) == 0:
		return fmt.Errorf("job record: empty")
	case b[0] == oldRecordMagic:
		return fmt.Errorf("job record: written by a pre-release build (binary encoding 0xA7); this build reads version-%d protobuf records only: empty the node's data directory", RecordVersion)
	case b[0] == oldRecordJSON:
		return fmt.Errorf("job record: written by a pre-release build (JSON); this build reads version-%d protobuf records only: empty the node's data directory", RecordVersion)
	}
	return nil
}
