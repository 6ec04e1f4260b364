package node

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/store"
)

// JobRecordProtocolV2 carries job-record replicas from a manager to a
// replica peer over one long-lived stream per peer, any number of records
// per frame: each request frame is JSON
// {"records": [{"record": <JobRecord>, "replicas": [<node id>, ...]}, ...]},
// answered, in order, by one frame {"stored": <count>, "errors": {<job id>:
// <why>}, "error": <why the whole frame was refused>}.
//
// Version 1 (JobRecordProtocol) opened a stream per record and peer: its
// protocol negotiation and the replica's answer were, in the round
// benchmark, as much CPU as the auction itself, and they ran exactly when
// a submitted job's first round did. A node still answers version 1, and
// falls back to it for a peer that does not speak version 2.
const JobRecordProtocolV2 = protocol.ID("/agora/jobrecord/2.0.0")

// JobRecordProtocolV3 is version 2 with binary records: a request frame
// is a uvarint count of records, then each record as a uvarint length and
// a replica message — a uvarint count of replica peers, each peer ID as a
// uvarint length and its bytes, then the job record in the binary
// encoding (market.EncodeJobRecord) to the element's end. Answers are
// version 2's JSON. Version 2's JSON records were, in the placement
// benchmark, most of a replica peer's CPU: their decoding, and the
// manager's encoding, three times the bytes. A node offers version 3
// first and falls back to 2, then 1, for a peer of an earlier release.
const JobRecordProtocolV3 = protocol.ID("/agora/jobrecord/3.0.0")

// recordsPerFrame bounds the records of one request frame. The replica
// decodes, checks and stores a frame in one go, without yielding its
// core; bounded frames (and a yield between them) keep a burst of record
// updates from stalling the auctions beside it on a small machine.
const recordsPerFrame = 8

// recordBatch is a version-2 request frame.
type recordBatch struct {
	Records []jobReplicaMsg `json:"records"`
}

// recordBatchReply is a version-2 answer.
type recordBatchReply struct {
	Stored int               `json:"stored"`
	Errors map[string]string `json:"errors,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// recordLinks are the version-2 streams this node keeps to replica peers.
type recordLinks struct {
	mu    sync.Mutex
	links map[peer.ID]*recordLink
}

// recordLink is one replica peer's stream. Writes and the queue of
// waiting requests share mu, so that the queue is in the order the frames
// left, which is the order their answers come back in.
type recordLink struct {
	mu      sync.Mutex
	s       network.Stream // nil until opened, and after an error
	w       *bufio.Writer
	waiting []chan recordResult
}

// recordProtocols are the job-record protocols a manager offers, newest
// first.
var recordProtocols = []protocol.ID{JobRecordProtocolV3, JobRecordProtocolV2, JobRecordProtocol}

// recordResult is the answer to one request frame, or why none came.
type recordResult struct {
	reply recordBatchReply
	err   error
}

func (l *recordLinks) link(p peer.ID) *recordLink {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.links == nil {
		l.links = map[peer.ID]*recordLink{}
	}
	k, ok := l.links[p]
	if !ok {
		k = &recordLink{}
		l.links[p] = k
	}
	return k
}

// forget drops p's link (the peer left the view).
func (l *recordLinks) forget(p peer.ID) {
	l.mu.Lock()
	k := l.links[p]
	delete(l.links, p)
	l.mu.Unlock()
	if k != nil {
		k.mu.Lock()
		k.fail(k.s, errors.New("replica peer gone"))
		k.mu.Unlock()
	}
}

// fail ends stream s if it is still the link's and answers every waiting
// request with err. The caller holds k.mu.
func (k *recordLink) fail(s network.Stream, err error) {
	if s == nil || k.s != s {
		return
	}
	_ = s.Reset()
	k.s, k.w = nil, nil
	for _, ch := range k.waiting {
		ch <- recordResult{err: err}
	}
	k.waiting = nil
}

// readReplies hands each answer read from s to the oldest waiting request,
// until s ends.
func (k *recordLink) readReplies(s network.Stream) {
	r := bufio.NewReader(s)
	for {
		b, err := wire.ReadFrame(r, 64<<10)
		var rep recordBatchReply
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		k.mu.Lock()
		if err != nil || k.s != s || len(k.waiting) == 0 {
			if err == nil {
				err = errors.New("unexpected job-record answer")
			}
			k.fail(s, fmt.Errorf("job-record stream: %w", err))
			k.mu.Unlock()
			return
		}
		ch := k.waiting[0]
		k.waiting = k.waiting[1:]
		k.mu.Unlock()
		ch <- recordResult{reply: rep}
	}
}

// encodedRecord is a jobReplicaMsg encoded once, for every peer and
// frame it goes in: bin for version 3; raw, its JSON for versions 2 and
// 1, only once a peer of an earlier release needs it (withJSON).
type encodedRecord struct {
	id   string
	bin  []byte
	raw  []byte
	msg  jobReplicaMsg
	jerr error // why raw could not be built
}

// encodeRecord encodes j with its replica set, or says why it cannot be
// replicated.
func encodeRecord(j market.JobRecord, reps []string) (encodedRecord, error) {
	bin, err := encodeReplicaMsg(jobReplicaMsg{Record: j, Replicas: reps})
	if err == nil && len(bin) > maxJobRecordFrame-64 {
		err = fmt.Errorf("%d bytes encoded, over the %d-byte frame limit", len(bin), maxJobRecordFrame)
	}
	return encodedRecord{id: j.ID, bin: bin, msg: jobReplicaMsg{Record: j, Replicas: reps}}, err
}

// withJSON returns recs with their JSON built, for a peer that speaks
// version 2 or 1. A record whose JSON cannot be built or is over the
// frame limit is left out, and its error returned with the others'.
func withJSON(recs []encodedRecord) ([]encodedRecord, error) {
	out := recs[:0:0]
	var errs []error
	for _, e := range recs {
		if e.raw == nil && e.jerr == nil {
			e.raw, e.jerr = json.Marshal(e.msg)
			if e.jerr == nil && len(e.raw) > maxJobRecordFrame-64 {
				e.raw, e.jerr = nil, fmt.Errorf("%d bytes as JSON, over the %d-byte frame limit of versions 1 and 2", len(e.raw), maxJobRecordFrame)
			}
		}
		if e.jerr != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", e.id, e.jerr))
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

// pushRecords replicates recs to peer p and waits for its answer. It
// returns the IDs of the records p stored.
func (n *Node) pushRecords(ctx context.Context, p peer.ID, recs []encodedRecord) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	stored := map[string]bool{}
	var skipped error
	for len(recs) > 0 {
		k, err := n.pushFrame(ctx, p, recs, stored)
		if err != nil {
			return stored, errors.Join(skipped, err)
		}
		if k < 0 { // the peer is of an earlier release: JSON from now on
			if recs, err = withJSON(recs); err != nil {
				skipped = errors.Join(skipped, err)
			}
			continue
		}
		recs = recs[k:]
	}
	return stored, skipped
}

// recordFrameV3 builds the version-3 request frame for the first records
// of recs, as recordFrame does version 2's.
func recordFrameV3(recs []encodedRecord) (int, []byte) {
	k, size := 0, 0
	for k < len(recs) && k < recordsPerFrame {
		if k > 0 && size+len(recs[k].bin)+2*binary.MaxVarintLen64 > maxJobRecordFrame {
			break
		}
		size += len(recs[k].bin) + binary.MaxVarintLen64
		k++
	}
	body := make([]byte, 0, size+binary.MaxVarintLen64)
	body = binary.AppendUvarint(body, uint64(k))
	for _, r := range recs[:k] {
		body = appendBytes(body, r.bin)
	}
	return k, body
}

// recordFrame builds the request frame for the first records of recs, at
// most recordsPerFrame of them and maxJobRecordFrame bytes (always at
// least one; encodeRecord bounds each), and says how many it holds.
func recordFrame(recs []encodedRecord) (int, []byte) {
	body := append(make([]byte, 0, 64+len(recs[0].raw)), `{"records":[`...)
	k := 0
	for k < len(recs) && k < recordsPerFrame {
		if k > 0 && len(body)+len(recs[k].raw)+3 > maxJobRecordFrame {
			break
		}
		if k > 0 {
			body = append(body, ',')
		}
		body = append(body, recs[k].raw...)
		k++
	}
	return k, append(body, "]}"...)
}

// pushFrame sends one request frame on p's link, opening the stream
// when there is none, holding the first records of recs, and adds the
// records p stored to stored. It returns how many of recs it sent, or -1
// when the peer speaks version 2 or 1 and recs have no JSON yet
// (withJSON). A peer that only speaks version 1 gets each record on a
// stream of its own.
func (n *Node) pushFrame(ctx context.Context, p peer.ID, recs []encodedRecord, stored map[string]bool) (int, error) {
	k := n.recLinks.link(p)
	ch := make(chan recordResult, 1)
	k.mu.Lock()
	if k.s == nil {
		s, err := n.host.NewStream(ctx, p, recordProtocols...)
		if err != nil {
			k.mu.Unlock()
			return 0, err
		}
		if s.Protocol() == JobRecordProtocol {
			k.mu.Unlock()
			if recs[0].raw == nil {
				_ = s.Reset()
				return -1, nil
			}
			m := min(len(recs), recordsPerFrame)
			return m, n.pushV1(ctx, p, s, recs[:m], stored)
		}
		k.s, k.w = s, bufio.NewWriter(s)
		go k.readReplies(s)
	}
	var m int
	var body []byte
	switch {
	case k.s.Protocol() == JobRecordProtocolV3:
		m, body = recordFrameV3(recs)
	case recs[0].raw == nil:
		k.mu.Unlock()
		return -1, nil
	default:
		m, body = recordFrame(recs)
	}
	recs = recs[:m]
	s := k.s
	err := wire.WriteFrame(k.w, body)
	if err == nil {
		err = k.w.Flush()
	}
	if err != nil {
		k.fail(s, err)
		k.mu.Unlock()
		return 0, err
	}
	k.waiting = append(k.waiting, ch)
	k.mu.Unlock()
	select {
	case res := <-ch:
		if res.err != nil {
			return 0, res.err
		}
		if res.reply.Error != "" {
			return 0, errors.New(res.reply.Error)
		}
		for _, r := range recs {
			if _, bad := res.reply.Errors[r.id]; !bad {
				stored[r.id] = true
			}
		}
		if len(res.reply.Errors) > 0 {
			return 0, fmt.Errorf("%d of %d records refused: %v", len(res.reply.Errors), len(recs), res.reply.Errors)
		}
		return m, nil
	case <-ctx.Done():
		// The peer is too slow: start afresh, so that a request queued
		// behind this one is not left waiting as well.
		k.mu.Lock()
		k.fail(s, ctx.Err())
		k.mu.Unlock()
		return 0, ctx.Err()
	}
}

// pushV1 replicates recs to a version-1 peer: the first on s, already
// negotiated, each other one on a new stream.
func (n *Node) pushV1(ctx context.Context, p peer.ID, s network.Stream, recs []encodedRecord, stored map[string]bool) error {
	var first error
	for i, r := range recs {
		var err error
		if i == 0 {
			err = exchangeRecord(ctx, s, r.raw)
		} else {
			err = n.sendRecord(ctx, p, r.raw)
		}
		if err == nil {
			stored[r.id] = true
		} else if first == nil {
			first = err
		}
	}
	return first
}

// handleRecords serves a version-2 stream: every request frame is checked
// record by record, the valid ones stored in one write, and answered.
func (n *Node) handleRecords(s network.Stream) { n.serveRecords(s, n.storeFrame) }

// handleRecordsV3 serves a version-3 stream, as handleRecords version 2.
func (n *Node) handleRecordsV3(s network.Stream) { n.serveRecords(s, n.storeFrameV3) }

// serveRecords answers every request frame on s with what store makes of
// it, until s ends.
func (n *Node) serveRecords(s network.Stream, store func(from string, b []byte) recordBatchReply) {
	defer s.Close()
	from := s.Conn().RemotePeer().String()
	r, w := bufio.NewReader(s), bufio.NewWriter(s)
	for {
		b, err := wire.ReadFrame(r, maxJobRecordFrame)
		if err != nil {
			return // the manager closed the stream, or it broke
		}
		out, _ := json.Marshal(store(from, b))
		if wire.WriteFrame(w, out) != nil || w.Flush() != nil {
			_ = s.Reset()
			return
		}
		runtime.Gosched() // see recordsPerFrame
	}
}

// storeFrame decodes a request frame from peer from and stores its valid
// records.
func (n *Node) storeFrame(from string, b []byte) recordBatchReply {
	var batch recordBatch
	if err := json.Unmarshal(b, &batch); err != nil {
		return recordBatchReply{Error: fmt.Sprintf("malformed job records: %v", err)}
	}
	return n.storeReplicas(from, batch.Records)
}

// storeFrameV3 decodes a version-3 request frame from peer from and
// stores its valid records.
func (n *Node) storeFrameV3(from string, b []byte) recordBatchReply {
	msgs, err := decodeRecordFrameV3(b)
	if err != nil {
		return recordBatchReply{Error: fmt.Sprintf("malformed job records: %v", err)}
	}
	return n.storeReplicas(from, msgs)
}

// decodeRecordFrameV3 decodes a version-3 request frame.
func decodeRecordFrameV3(b []byte) ([]jobReplicaMsg, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)-k)/2 { // a record takes two bytes at least
		return nil, errors.New("record count: truncated or past the frame's end")
	}
	b = b[k:]
	msgs := make([]jobReplicaMsg, count)
	for i := range msgs {
		msg, rest, ok := readBytes(b)
		if !ok {
			return nil, fmt.Errorf("record %d of %d: truncated", i+1, count)
		}
		if err := decodeReplicaMsg(msg, &msgs[i]); err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i+1, count, err)
		}
		b = rest
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d bytes after the %d records", len(b), count)
	}
	return msgs, nil
}

// storeReplicas stores the valid records among recs, sent by peer from, in
// one write, and says which were refused and why.
func (n *Node) storeReplicas(from string, recs []jobReplicaMsg) recordBatchReply {
	var rep recordBatchReply
	now := time.Now()
	entries := make([]store.Entry[replicaRecord], 0, len(recs))
	for _, m := range recs {
		if err := checkReplica(from, m); err != nil {
			if rep.Errors == nil {
				rep.Errors = map[string]string{}
			}
			rep.Errors[m.Record.ID] = err.Error()
			continue
		}
		entries = append(entries, store.Entry[replicaRecord]{Key: m.Record.ID,
			Value: replicaRecord{Record: m.Record, Replicas: m.Replicas, Updated: now}})
	}
	if err := n.replicas.PutAll(entries); err != nil {
		rep.Error = err.Error()
		return rep
	}
	for _, e := range entries {
		n.fo.noteReplicas(e.Value)
	}
	rep.Stored = len(entries)
	return rep
}

// checkReplica says why a record sent by peer from may not be kept as a
// replica, or nil.
func checkReplica(from string, m jobReplicaMsg) error {
	if string(m.Record.Manager) != from {
		return fmt.Errorf("record's manager %s is not the sender %s", m.Record.Manager, from)
	}
	if err := m.Record.Spec.Validate(); err != nil || m.Record.ID == "" {
		return fmt.Errorf("invalid job record: %v", err)
	}
	return nil
}

// replicateAll pushes records to their replica peers, each encoded once,
// one request per peer and frame, waits for the answers and returns, per
// job, how many peers stored its record, and the jobs whose record fewer
// peers stored than were asked.
func (n *Node) replicateAll(ctx context.Context, recs []market.JobRecord) (map[string]int, []string) {
	byPeer := map[string][]encodedRecord{}
	wanted := 0
	asked := map[string]int{}
	for _, j := range recs {
		reps := n.replicaPeers(j.ID)
		e, err := encodeRecord(j, reps)
		if err != nil {
			log.Warnw("job record cannot be replicated", "job", j.ID, "err", err)
			continue
		}
		for _, r := range reps {
			byPeer[r] = append(byPeer[r], e)
		}
		wanted += len(reps)
		asked[j.ID] = len(reps)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[string]int{}
	for r, msgs := range byPeer {
		p, err := peer.Decode(r)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := n.pushRecords(ctx, p, msgs)
			if err != nil {
				log.Debugw("replicate job records", "records", len(msgs), "peer", p, "err", err)
			}
			mu.Lock()
			for id := range ok {
				stored[id]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	copies := 0
	for _, c := range stored {
		copies += c
	}
	n.met.copiesStored.Add(float64(copies))
	n.met.copiesFailed.Add(float64(wanted - copies))
	var short []string
	for id, k := range asked {
		if stored[id] < k {
			short = append(short, id)
		}
	}
	return stored, short
}
