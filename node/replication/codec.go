package replication

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agora-sched/agora/market"
)

// The stored form of a Copy, version 1: the magic byte 0xA8, the version,
// the replica set (a uvarint count, then each peer ID as a uvarint length
// and its bytes), the time it was stored (a uvarint length and
// time.Time's binary form), then the job record in the binary job-record
// encoding (market.EncodeJobRecord) to the end. Copies stored as JSON by
// earlier versions still read.
const (
	copyMagic   = 0xA8
	copyVersion = 1
)

// EncodeCopy encodes c for the node's replicas bucket.
func EncodeCopy(c Copy) ([]byte, error) {
	rec, err := market.EncodeJobRecord(c.Record)
	if err != nil {
		return nil, err
	}
	updated, err := c.Updated.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("copy of job %s: stored time: %w", c.Record.ID, err)
	}
	b := make([]byte, 0, 16+len(updated)+len(rec)+len(c.Replicas)*56)
	b = append(b, copyMagic, copyVersion)
	b = appendPeerList(b, c.Replicas)
	b = appendBytes(b, updated)
	return append(b, rec...), nil
}

// DecodeCopy decodes a stored copy, binary or JSON.
func DecodeCopy(data []byte, c *Copy) error {
	if len(data) == 0 {
		return errors.New("job-record copy: empty")
	}
	if data[0] != copyMagic {
		var v Copy
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("job-record copy: neither binary nor JSON: %w", err)
		}
		*c = v
		return nil
	}
	b := data[1:]
	v, k := binary.Uvarint(b)
	switch {
	case k <= 0:
		return errors.New("job-record copy: version: truncated")
	case v != copyVersion:
		return fmt.Errorf("job-record copy: encoding version %d, this node reads version %d", v, copyVersion)
	}
	reps, b, err := readPeerList(b[k:])
	if err != nil {
		return fmt.Errorf("job-record copy: %w", err)
	}
	out := Copy{Replicas: reps}
	updated, b, ok := readBytes(b)
	if !ok {
		return errors.New("job-record copy: stored time: truncated")
	}
	if err := out.Updated.UnmarshalBinary(updated); err != nil {
		return fmt.Errorf("job-record copy: stored time: %w", err)
	}
	if err := market.DecodeJobRecord(b, &out.Record); err != nil {
		return fmt.Errorf("job-record copy: %w", err)
	}
	*c = out
	return nil
}

// encodeElement encodes a record and its replica set as one element of a
// request frame: the replica set, then the record in the binary job-record
// encoding to the element's end.
func encodeElement(rec market.JobRecord, peers []market.NodeID) ([]byte, error) {
	b, err := market.EncodeJobRecord(rec)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8+len(b)+len(peers)*56)
	out = appendPeerList(out, peers)
	return append(out, b...), nil
}

// decodeElement decodes one element of a request frame.
func decodeElement(data []byte) (market.JobRecord, []market.NodeID, error) {
	peers, rest, err := readPeerList(data)
	if err != nil {
		return market.JobRecord{}, nil, err
	}
	var rec market.JobRecord
	if err := market.DecodeJobRecord(rest, &rec); err != nil {
		return market.JobRecord{}, nil, err
	}
	return rec, peers, nil
}

// requestFrame builds the request frame for the first of elems (encoded
// elements): a uvarint count, then each element as a uvarint length and
// its bytes; at most recordsPerFrame elements and maxFrame bytes, at
// least one. It says how many it holds.
func requestFrame(elems [][]byte) (int, []byte) {
	k, size := 0, 0
	for k < len(elems) && k < recordsPerFrame {
		if k > 0 && size+len(elems[k])+2*binary.MaxVarintLen64 > maxFrame {
			break
		}
		size += len(elems[k]) + binary.MaxVarintLen64
		k++
	}
	body := make([]byte, 0, size+binary.MaxVarintLen64)
	body = binary.AppendUvarint(body, uint64(k))
	for _, e := range elems[:k] {
		body = appendBytes(body, e)
	}
	return k, body
}

// element is a decoded element of a request frame.
type element struct {
	rec   market.JobRecord
	peers []market.NodeID
}

// decodeFrame decodes a request frame.
func decodeFrame(b []byte) ([]element, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)-k)/2 { // an element takes two bytes at least
		return nil, errors.New("record count: truncated or past the frame's end")
	}
	b = b[k:]
	out := make([]element, count)
	for i := range out {
		e, rest, ok := readBytes(b)
		if !ok {
			return nil, fmt.Errorf("record %d of %d: truncated", i+1, count)
		}
		rec, peers, err := decodeElement(e)
		if err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i+1, count, err)
		}
		out[i] = element{rec: rec, peers: peers}
		b = rest
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d bytes after the %d records", len(b), count)
	}
	return out, nil
}

// appendPeerList appends a uvarint count and each ID as a uvarint length
// and its bytes.
func appendPeerList(b []byte, ids []market.NodeID) []byte {
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
func readPeerList(b []byte) ([]market.NodeID, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) { // each ID takes a byte at least
		return nil, nil, errors.New("replica set: truncated")
	}
	b = b[k:]
	var ids []market.NodeID
	if n > 0 {
		ids = make([]market.NodeID, n)
	}
	for i := range ids {
		p, rest, ok := readBytes(b)
		if !ok {
			return nil, nil, errors.New("replica set: truncated")
		}
		ids[i], b = market.NodeID(p), rest
	}
	return ids, b, nil
}
