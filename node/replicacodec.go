package node

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agora-sched/agora/market"
)

// The stored form of a replicaRecord, version 1: the magic byte 0xA8, the
// version, the replica set (a uvarint count, then each peer ID as a
// uvarint length and its bytes), the time it was stored (a uvarint length
// and time.Time's binary form), then the job record in the binary
// job-record encoding (market.EncodeJobRecord) to the end. Replicas stored
// as JSON by earlier versions still read.
const (
	replicaRecordMagic   = 0xA8
	replicaRecordVersion = 1
)

// encodeReplicaRecord encodes r for the replicas bucket.
func encodeReplicaRecord(r replicaRecord) ([]byte, error) {
	rec, err := market.EncodeJobRecord(r.Record)
	if err != nil {
		return nil, err
	}
	updated, err := r.Updated.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("replica of job %s: stored time: %w", r.Record.ID, err)
	}
	b := make([]byte, 0, 16+len(updated)+len(rec)+len(r.Replicas)*56)
	b = append(b, replicaRecordMagic, replicaRecordVersion)
	b = appendPeerList(b, r.Replicas)
	b = appendBytes(b, updated)
	return append(b, rec...), nil
}

// decodeReplicaRecord decodes a stored replica, binary or JSON.
func decodeReplicaRecord(data []byte, r *replicaRecord) error {
	if len(data) == 0 {
		return errors.New("job-record replica: empty")
	}
	if data[0] != replicaRecordMagic {
		var v replicaRecord
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("job-record replica: neither binary nor JSON: %w", err)
		}
		*r = v
		return nil
	}
	b := data[1:]
	v, k := binary.Uvarint(b)
	switch {
	case k <= 0:
		return errors.New("job-record replica: version: truncated")
	case v != replicaRecordVersion:
		return fmt.Errorf("job-record replica: encoding version %d, this node reads version %d", v, replicaRecordVersion)
	}
	reps, b, err := readPeerList(b[k:])
	if err != nil {
		return fmt.Errorf("job-record replica: %w", err)
	}
	out := replicaRecord{Replicas: reps}
	updated, b, ok := readBytes(b)
	if !ok {
		return errors.New("job-record replica: stored time: truncated")
	}
	if err := out.Updated.UnmarshalBinary(updated); err != nil {
		return fmt.Errorf("job-record replica: stored time: %w", err)
	}
	if err := market.DecodeJobRecord(b, &out.Record); err != nil {
		return fmt.Errorf("job-record replica: %w", err)
	}
	*r = out
	return nil
}

// encodeReplicaMsg encodes a record and its replica set as one record of
// a version-3 job-record frame (JobRecordProtocolV3): the replica set
// (a uvarint count, then each peer ID as a uvarint length and its
// bytes), then the record in the binary job-record encoding to the end.
func encodeReplicaMsg(m jobReplicaMsg) ([]byte, error) {
	rec, err := market.EncodeJobRecord(m.Record)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8+len(rec)+len(m.Replicas)*56)
	b = appendPeerList(b, m.Replicas)
	return append(b, rec...), nil
}

// decodeReplicaMsg decodes one record of a version-3 frame.
func decodeReplicaMsg(data []byte, m *jobReplicaMsg) error {
	reps, rest, err := readPeerList(data)
	if err != nil {
		return err
	}
	var out jobReplicaMsg
	out.Replicas = reps
	if err := market.DecodeJobRecord(rest, &out.Record); err != nil {
		return err
	}
	*m = out
	return nil
}

// appendPeerList appends a uvarint count and each ID as a uvarint length
// and its bytes.
func appendPeerList(b []byte, ids []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, p := range ids {
		b = appendBytes(b, []byte(p))
	}
	return b
}

// appendBytes appends p as a uvarint length and its bytes.
func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// readBytes reads what appendBytes wrote and returns the rest; ok is
// false when b is too short.
func readBytes(b []byte) (p, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// readPeerList reads what appendPeerList wrote and returns the rest.
func readPeerList(b []byte) ([]string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) { // each ID takes a byte at least
		return nil, nil, errors.New("replica set: truncated")
	}
	b = b[k:]
	var ids []string
	if n > 0 {
		ids = make([]string, n)
	}
	for i := range ids {
		p, rest, ok := readBytes(b)
		if !ok {
			return nil, nil, errors.New("replica set: truncated")
		}
		ids[i], b = string(p), rest
	}
	return ids, b, nil
}
