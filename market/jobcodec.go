package market

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agora-sched/agora/market/auth"
)

// The binary job-record encoding: what a node stores for each job it
// manages or keeps a replica of. A job's record is rewritten whole at
// every commit that changes it, and as JSON a 25-task record whose
// tasks have run is about 18 KB, most of it the task records' field
// names, repeated peer IDs and RFC 3339 times; the store then copies
// each version into its log, its memtable and its tables. In this
// encoding the task records are varints, times are seconds, nanoseconds
// and zone offset, and each peer ID is written once per record: about a
// third of the JSON's size (BenchmarkJobRecordCodec). The spec stays
// JSON: it is a small part of the record, and keeping it JSON keeps one
// definition of its fields.
//
// The job-record copies travel in this encoding too (docs/protocol.md);
// JSON stays the record's format on the API and in peer queries.
// DecodeJobRecord reads records stored as JSON by earlier versions.
//
// Layout, version 1 (every integer a varint, every string a uvarint length
// and its bytes, every time a presence byte then seconds, nanoseconds and
// the zone's offset):
//
//	magic 0xA7, version 1
//	id, spec (JSON), manager, (version 5) origin and epoch tag (uvarint, below 2^20), submitted, state, reason, finished
//	node table: count, then each node ID
//	tasks: count, then each task record: key's job (0: the record's id,
//	  1: a string follows), task, replica, state, node (table index),
//	  epoch, attempts, failures, exit code, reason, ready, not before,
//	  started, finished, lease until, then its history: count, then each
//	  attempt: attempt, epoch, node (table index), state, exit code,
//	  reason, awarded, started, finished; then (version 4) its outputs:
//	  0, or 1 then the manifest, bytes and holders (count, then table
//	  indexes)
const (
	jobRecordMagic   = 0xA7
	jobRecordVersion = 5 // 2 added owner and ticket, 3 stores the ticket without the spec, 4 outputs, 5 origin and epoch tag; 1 to 4 still read
)

// EncodeJobRecord encodes j in the binary job-record encoding.
func EncodeJobRecord(j JobRecord) ([]byte, error) { return encodeJobRecord(j, jobRecordVersion) }

// encodeJobRecord writes version (3 or jobRecordVersion; tests write 3).
func encodeJobRecord(j JobRecord, version byte) ([]byte, error) {
	specJSON, err := json.Marshal(j.Spec)
	if err != nil {
		return nil, fmt.Errorf("job record %s: encode spec: %w", j.ID, err)
	}
	nodes := map[NodeID]uint64{}
	var table []NodeID
	ref := func(n NodeID) {
		if _, ok := nodes[n]; !ok {
			nodes[n] = uint64(len(table))
			table = append(table, n)
		}
	}
	for i := range j.Tasks {
		ref(j.Tasks[i].Node)
		for _, a := range j.Tasks[i].History {
			ref(a.Node)
		}
		if o := j.Tasks[i].Outputs; o != nil {
			for _, h := range o.Holders {
				ref(h)
			}
		}
	}
	var e recEncoder
	e.b = make([]byte, 0, 128+len(specJSON)+len(j.Tasks)*48)
	e.b = append(e.b, jobRecordMagic, version)
	e.str(j.ID)
	e.bytes(specJSON)
	e.str(string(j.Manager))
	if version >= 5 {
		e.str(string(j.Origin))
		e.uint(uint64(j.EpochTag))
	}
	e.time(j.Submitted)
	e.str(string(j.State))
	e.str(j.Reason)
	e.time(j.Finished)
	e.str(j.Owner)
	// The ticket signs the spec's canonical form, the bytes just written:
	// it is stored without them (flag 1), else whole (flag 0).
	if head, sp, rest, err := auth.SplitTicket(j.Ticket); len(j.Ticket) > 0 && err == nil && bytes.Equal(sp, specJSON) {
		e.uint(1)
		e.uint(uint64(len(head) + 1 + len(rest)))
		e.b = append(append(append(e.b, head...), 0), rest...)
	} else {
		e.uint(0)
		e.bytes(j.Ticket)
	}
	e.uint(uint64(len(table)))
	for _, n := range table {
		e.str(string(n))
	}
	e.uint(uint64(len(j.Tasks)))
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if t.Key.Job == j.ID {
			e.uint(0)
		} else {
			e.uint(1)
			e.str(t.Key.Job)
		}
		e.str(t.Key.Task)
		e.int(int64(t.Key.Replica))
		e.str(string(t.State))
		e.uint(nodes[t.Node])
		e.uint(t.Epoch)
		e.int(int64(t.Attempts))
		e.int(int64(t.Failures))
		e.int(int64(t.ExitCode))
		e.str(t.Reason)
		e.time(t.Ready)
		e.time(t.NotBefore)
		e.time(t.Started)
		e.time(t.Finished)
		e.time(t.LeaseUntil)
		e.uint(uint64(len(t.History)))
		for _, a := range t.History {
			e.int(int64(a.Attempt))
			e.uint(a.Epoch)
			e.uint(nodes[a.Node])
			e.str(string(a.State))
			e.int(int64(a.ExitCode))
			e.str(a.Reason)
			e.time(a.Awarded)
			e.time(a.Started)
			e.time(a.Finished)
		}
		if version >= 4 {
			e.outputs(t.Outputs, nodes)
		}
	}
	return e.b, nil
}

// DecodeJobRecord decodes a job record stored in the binary encoding or,
// as earlier versions stored it, as JSON. An error names the field that
// could not be read.
func DecodeJobRecord(data []byte, j *JobRecord) error {
	if len(data) == 0 {
		return errors.New("job record: empty")
	}
	if data[0] != jobRecordMagic {
		var r JobRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("job record: neither binary nor JSON: %w", err)
		}
		*j = r
		return nil
	}
	d := recDecoder{b: data[1:]}
	v := d.uint("version")
	if d.err == nil && (v < 1 || v > jobRecordVersion) {
		return fmt.Errorf("job record: encoding version %d, this node reads versions 1 to %d", v, jobRecordVersion)
	}
	var r JobRecord
	r.ID = d.str("id")
	spec := d.bytes("spec")
	if d.err == nil {
		if err := json.Unmarshal(spec, &r.Spec); err != nil {
			return fmt.Errorf("job record %s: spec: %w", r.ID, err)
		}
	}
	r.Manager = NodeID(d.str("manager"))
	if v >= 5 {
		r.Origin = NodeID(d.str("origin"))
		tag := d.uint("epoch tag")
		if d.err == nil && tag >= 1<<epochTagBits {
			d.fail("epoch tag", fmt.Errorf("%d is not below 2^%d", tag, epochTagBits))
		}
		r.EpochTag = uint32(tag)
	}
	r.Submitted = d.time("submitted")
	r.State = JobState(d.str("state"))
	r.Reason = d.str("reason")
	r.Finished = d.time("finished")
	if v >= 2 {
		r.Owner = d.str("owner")
		detached := v >= 3 && d.uint("ticket form") == 1
		if t := d.bytes("ticket"); len(t) > 0 && d.err == nil {
			r.Ticket = t
			if detached {
				full, err := auth.AttachSpec(t, spec)
				if err != nil {
					return fmt.Errorf("job record %s: ticket: %w", r.ID, err)
				}
				r.Ticket, r.specSigned = full, true
			}
		}
	}
	table := make([]NodeID, d.count("node table", 1))
	for i := range table {
		table[i] = NodeID(d.str("node table"))
	}
	node := func(what string) NodeID {
		i := d.uint(what)
		if d.err == nil && i >= uint64(len(table)) {
			d.fail(what, fmt.Errorf("node %d of a table of %d", i, len(table)))
		}
		if d.err != nil {
			return ""
		}
		return table[i]
	}
	// A task record takes at least 16 bytes, an attempt 9 (a zero time is
	// one byte).
	r.Tasks = make([]TaskRecord, d.count("tasks", 16))
	for i := range r.Tasks {
		t := &r.Tasks[i]
		switch d.uint("task key") {
		case 0:
			t.Key.Job = r.ID
		case 1:
			t.Key.Job = d.str("task key")
		default:
			d.fail("task key", errors.New("bad job marker"))
		}
		t.Key.Task = d.str("task name")
		t.Key.Replica = d.intv("replica")
		t.State = TaskState(d.str("task state"))
		t.Node = node("task node")
		t.Epoch = d.uint("epoch")
		t.Attempts = d.intv("attempts")
		t.Failures = d.intv("failures")
		t.ExitCode = d.intv("exit code")
		t.Reason = d.str("task reason")
		t.Ready = d.time("ready")
		t.NotBefore = d.time("not before")
		t.Started = d.time("started")
		t.Finished = d.time("finished")
		t.LeaseUntil = d.time("lease until")
		if n := d.count("history", 9); n > 0 {
			t.History = make([]AttemptRecord, n)
			for k := range t.History {
				a := &t.History[k]
				a.Attempt = d.intv("attempt")
				a.Epoch = d.uint("attempt epoch")
				a.Node = node("attempt node")
				a.State = TaskState(d.str("attempt state"))
				a.ExitCode = d.intv("attempt exit code")
				a.Reason = d.str("attempt reason")
				a.Awarded = d.time("awarded")
				a.Started = d.time("attempt started")
				a.Finished = d.time("attempt finished")
			}
		}
		if v >= 4 && d.uint("outputs") == 1 {
			o := &DataRef{Manifest: d.str("outputs manifest"), Bytes: int64(d.intv("outputs bytes"))}
			if n := d.count("outputs holders", 1); n > 0 {
				o.Holders = make([]NodeID, n)
				for k := range o.Holders {
					o.Holders[k] = node("outputs holder")
				}
			}
			t.Outputs = o
		}
		if d.err != nil {
			break
		}
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("end", fmt.Errorf("%d bytes after the record", len(d.b)))
	}
	if d.err != nil {
		return fmt.Errorf("job record %q: %w", r.ID, d.err)
	}
	*j = r
	return nil
}

// recEncoder appends the binary encoding's items.
type recEncoder struct{ b []byte }

func (e *recEncoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *recEncoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }

// outputs writes a task's outputs: 0, or 1, the manifest, bytes and
// holders as node-table indexes.
func (e *recEncoder) outputs(o *DataRef, nodes map[NodeID]uint64) {
	if o == nil {
		e.uint(0)
		return
	}
	e.uint(1)
	e.str(o.Manifest)
	e.int(o.Bytes)
	e.uint(uint64(len(o.Holders)))
	for _, h := range o.Holders {
		e.uint(nodes[h])
	}
}

func (e *recEncoder) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *recEncoder) bytes(p []byte) {
	e.uint(uint64(len(p)))
	e.b = append(e.b, p...)
}

// time writes 0 for the zero time, else 1, the Unix seconds, the
// nanoseconds and the zone's offset in seconds: what JSON's RFC 3339
// keeps (an instant and its offset), without the monotonic reading.
func (e *recEncoder) time(t time.Time) {
	if t.IsZero() {
		e.b = append(e.b, 0)
		return
	}
	_, off := t.Zone()
	e.b = append(e.b, 1)
	e.int(t.Unix())
	e.uint(uint64(t.Nanosecond()))
	e.int(int64(off))
}

// recDecoder reads the binary encoding's items; after the first error
// every read returns a zero value and err keeps that error.
type recDecoder struct {
	b   []byte
	err error
}

func (d *recDecoder) fail(what string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %w", what, err)
	}
}

var errTruncated = errors.New("truncated")

func (d *recDecoder) uint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what, errTruncated)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int reads a zig-zag varint, as binary.AppendVarint writes it.
func (d *recDecoder) int(what string) int64 {
	ux := d.uint(what)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// intv reads a signed integer that must fit in an int.
func (d *recDecoder) intv(what string) int {
	v := d.int(what)
	if int64(int(v)) != v {
		d.fail(what, fmt.Errorf("%d out of range", v))
		return 0
	}
	return int(v)
}

// count reads a length whose elements take at least min bytes each, so
// that a corrupt count cannot make the decoder allocate more than the
// data could hold.
func (d *recDecoder) count(what string, min int) int {
	v := d.uint(what)
	if d.err == nil && v > uint64(len(d.b)/min) {
		d.fail(what, fmt.Errorf("count %d, more than the %d bytes left could hold", v, len(d.b)))
	}
	if d.err != nil {
		return 0
	}
	return int(v)
}

func (d *recDecoder) bytes(what string) []byte {
	n := d.count(what, 1)
	if d.err != nil {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *recDecoder) str(what string) string { return string(d.bytes(what)) }

func (d *recDecoder) time(what string) time.Time {
	if d.err != nil {
		return time.Time{}
	}
	if len(d.b) == 0 {
		d.fail(what, errTruncated)
		return time.Time{}
	}
	flag := d.b[0]
	d.b = d.b[1:]
	switch flag {
	case 0:
		return time.Time{}
	case 1:
	default:
		d.fail(what, fmt.Errorf("bad time marker %d", flag))
		return time.Time{}
	}
	sec := d.int(what)
	nsec := d.uint(what)
	off := d.int(what)
	switch {
	case d.err != nil:
	case nsec >= 1e9:
		d.fail(what, fmt.Errorf("%d nanoseconds", nsec))
	case off <= -24*3600 || off >= 24*3600:
		d.fail(what, fmt.Errorf("zone offset %d s", off))
	}
	if d.err != nil {
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec))
	if off == 0 {
		return t.UTC()
	}
	return t.In(time.FixedZone("", int(off)))
}
