package replication

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/market/wire/pb"
)

// The stored form of a Copy: a pb.StoredCopy of version 1 (market.proto),
// sealed with its checksum (wire.MarshalSealed); the record inside is a
// job record as wire.EncodeJobRecord writes it. Copies of pre-release
// builds (binary, beginning with the byte 0xA8, or JSON) are refused by
// name.
const (
	copyVersion    = 1
	oldCopyMagic   = 0xA8
	oldCopyJSON    = '{'
	copyWhat       = "job-record copy"
	frameCopyField = 1 // CopyBatch.copies
)

// EncodeCopy encodes c for the node's replicas bucket.
func EncodeCopy(c Copy) ([]byte, error) {
	x := &pb.StoredCopy{Version: copyVersion}
	if err := wire.ToProto("stored_copy", c, x); err != nil {
		return nil, fmt.Errorf("copy of job %s: %w", c.Record.ID, err)
	}
	return wire.MarshalSealed(x)
}

// DecodeCopy decodes a stored copy into c, which a failed decode leaves
// as it was.
func DecodeCopy(data []byte, c *Copy) error {
	switch {
	case len(data) == 0:
		return errors.New(copyWhat + ": empty")
	case data[0] == oldCopyMagic || data[0] == oldCopyJSON:
		return fmt.Errorf("%s: written by a pre-release build; this build reads version-%d protobuf copies only: empty the node's data directory", copyWhat, copyVersion)
	}
	var x pb.StoredCopy
	if err := wire.UnmarshalSealed(copyWhat, data, &x); err != nil {
		return err
	}
	if x.Version != copyVersion {
		return fmt.Errorf("%s: encoding version %d, this node reads version %d", copyWhat, x.Version, copyVersion)
	}
	var out Copy
	if err := wire.FromProto("stored_copy", &x, &out); err != nil {
		return fmt.Errorf("%s: %w", copyWhat, err)
	}
	*c = out
	return nil
}

// element is one record of a request frame and its replica set: a
// pb.CopyElement.
type element struct {
	Replicas []market.NodeID
	Record   market.JobRecord
}

// encodeElement encodes a record and its replica set as one element of a
// request frame.
func encodeElement(rec market.JobRecord, peers []market.NodeID) ([]byte, error) {
	var x pb.CopyElement
	if err := wire.ToProto("copy", element{Replicas: peers, Record: rec}, &x); err != nil {
		return nil, fmt.Errorf("copy of job %s: %w", rec.ID, err)
	}
	return marshal.Marshal(&x)
}

var marshal = proto.MarshalOptions{Deterministic: true}

// requestFrame builds the request frame for the first of elems (encoded
// elements): a pb.CopyBatch holding them, at most recordsPerFrame and
// maxFrame bytes, at least one. It says how many it holds.
func requestFrame(elems [][]byte) (int, []byte) {
	k, size := 0, 0
	for k < len(elems) && k < recordsPerFrame {
		n := protowire.SizeTag(frameCopyField) + protowire.SizeBytes(len(elems[k]))
		if k > 0 && size+n > maxFrame {
			break
		}
		size += n
		k++
	}
	body := make([]byte, 0, size)
	for _, e := range elems[:k] {
		body = protowire.AppendTag(body, frameCopyField, protowire.BytesType)
		body = protowire.AppendBytes(body, e)
	}
	return k, body
}

// decodeFrame decodes a request frame.
func decodeFrame(b []byte) ([]element, error) {
	var x pb.CopyBatch
	if err := proto.Unmarshal(b, &x); err != nil {
		return nil, fmt.Errorf("not a frame of job records: %w", err)
	}
	out := make([]element, len(x.Copies))
	for i, c := range x.Copies {
		if err := wire.FromProto("copy", c, &out[i]); err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i+1, len(x.Copies), err)
		}
	}
	return out, nil
}
