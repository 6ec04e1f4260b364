package checkpoints

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/names"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// Protocol moves checkpoints between nodes: an executor pushes
// chunks and manifests to its replica peers, a resuming executor fetches
// them. One request and one reply per stream, each a varint-length frame
// holding a JSON object (docs/protocol.md).
const Protocol = protocol.ID("/agora/checkpoint/1.0.0")

// Limits of the checkpoint protocol.
const (
	// maxCkFrame bounds a request or reply frame: a chunk of 512 KiB is
	// about 683 KiB in base64, a kept manifest at most 508 KiB.
	maxCkFrame = 1 << 20
	// maxCkIDs is the most chunk IDs in one "missing" request.
	maxCkIDs = 4096
	// ckCallTimeout bounds one request and its reply, client side.
	ckCallTimeout = 5 * time.Second
	// ckServeTimeout bounds one stream, server side.
	ckServeTimeout = 10 * time.Second
	// maxCkInbound is the most checkpoint streams served at once; more
	// are reset.
	maxCkInbound = 32
	// maxHeldManifests is the most task replicas whose manifest a node
	// keeps; a manifest for a new key beyond it is refused.
	maxHeldManifests = 4096
	// maxManifestsFrom is the most manifests one peer may have a node
	// keep for it (a peer runs at most a few hundred checkpointing
	// replicas at once).
	maxManifestsFrom = 1024
)

// Checkpoint request operations.
const (
	opMissing     = "missing"
	opPut         = "put"
	opManifest    = "manifest"
	opGetManifest = "get-manifest"
	opGet         = "get"
)

// Key names a task replica on the wire.
type Key struct {
	Job     string `json:"job"`
	Task    string `json:"task"`
	Replica int    `json:"replica"`
}

// ckRequest is a checkpoint request; which fields are used depends on Op.
type ckRequest struct {
	Op       string          `json:"op"`
	Key      *Key            `json:"key,omitempty"`      // manifest, get-manifest
	IDs      []string        `json:"ids,omitempty"`      // missing
	ID       string          `json:"id,omitempty"`       // put, get
	Data     []byte          `json:"data,omitempty"`     // put (base64)
	Manifest json.RawMessage `json:"manifest,omitempty"` // manifest
	// Allow lists the placements whose manifests the asker takes
	// (get-manifest): the replica's earlier executors and their epochs.
	Allow []market.Placement `json:"allow,omitempty"`
}

// ckReply answers a ckRequest. Error set means the request failed.
type ckReply struct {
	Error    string          `json:"error,omitempty"`
	Missing  []string        `json:"missing,omitempty"`  // missing
	Stored   bool            `json:"stored,omitempty"`   // manifest: kept (false: not newer)
	Found    bool            `json:"found,omitempty"`    // get-manifest, get
	Seq      uint64          `json:"seq,omitempty"`      // get-manifest
	Manifest json.RawMessage `json:"manifest,omitempty"` // get-manifest
	From     string          `json:"from,omitempty"`     // get-manifest: the peer that made it
	Data     []byte          `json:"data,omitempty"`     // get (base64)
}

// KeyOf is the wire key of a task replica.
func KeyOf(k market.TaskKey) *Key { return &Key{Job: k.Job, Task: k.Task, Replica: k.Replica} }

// String is the key's bucket key and placement key, "job/task/replica".
func (k Key) String() string { return k.Job + "/" + k.Task + "/" + strconv.Itoa(k.Replica) }

func (k *Key) validate() error {
	switch {
	case k == nil:
		return errors.New("key: missing")
	case !names.JobID(k.Job) || k.Job == "." || k.Job == "..":
		return errors.New("key.job: invalid")
	case !names.TaskName(k.Task) || k.Task == "." || k.Task == "..":
		return errors.New("key.task: invalid")
	case k.Replica < 0 || k.Replica > wire.MaxReplica:
		return fmt.Errorf("key.replica: out of range 0..%d", wire.MaxReplica)
	}
	return nil
}

// Matches reports whether m belongs to k.
func (k Key) Matches(m checkpoint.Manifest) bool {
	return m.Job == k.Job && m.Task == k.Task && m.Replica == k.Replica
}

func decodeCk(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// serve answers one checkpoint request.
func (s *Service) serve(st network.Stream) {
	select {
	case s.inbound <- struct{}{}:
		defer func() { <-s.inbound }()
	default:
		_ = st.Reset()
		return
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(ckServeTimeout))
	b, err := wire.ReadFrame(bufio.NewReader(st), maxCkFrame)
	if err != nil {
		_ = st.Reset()
		return
	}
	var rep ckReply
	var req ckRequest
	if err := decodeCk(b, &req); err != nil {
		rep.Error = "bad request: " + err.Error()
	} else {
		rep = s.answer(st.Conn().RemotePeer(), req, time.Now())
	}
	rep.Error = wire.ClipText(rep.Error, wire.MaxErrorLen)
	out, err := json.Marshal(rep)
	if err != nil || len(out) > maxCkFrame {
		_ = st.Reset()
		return
	}
	w := bufio.NewWriter(st)
	if wire.WriteFrame(w, out) == nil {
		_ = w.Flush()
	}
}

// answer answers one request of peer from from the local checkpoint
// store.
func (s *Service) answer(from peer.ID, req ckRequest, now time.Time) ckReply {
	cs := s.cs
	fail := func(err error) ckReply { return ckReply{Error: err.Error()} }
	switch req.Op {
	case opMissing:
		if len(req.IDs) > maxCkIDs {
			return fail(fmt.Errorf("ids: %d exceeds %d", len(req.IDs), maxCkIDs))
		}
		for _, id := range req.IDs {
			if !validChunkID(id) {
				return fail(fmt.Errorf("ids: invalid chunk id %q", clipID(id)))
			}
		}
		lack, err := cs.missing(req.IDs, now)
		if err != nil {
			return fail(err)
		}
		return ckReply{Missing: lack}
	case opPut:
		if err := s.mayPut(from, now); err != nil {
			return fail(err)
		}
		if err := cs.putRemote(req.ID, req.Data, now); err != nil {
			return fail(err)
		}
		return ckReply{}
	case opManifest:
		stored, err := s.acceptManifest(from, req.Key, req.Manifest, now)
		if err != nil {
			return fail(err)
		}
		return ckReply{Stored: stored}
	case opGetManifest:
		if err := req.Key.validate(); err != nil {
			return fail(err)
		}
		if len(req.Allow) > wire.MaxPrevious+1 {
			return fail(fmt.Errorf("allow: %d placements, over the limit of %d", len(req.Allow), wire.MaxPrevious+1))
		}
		self := s.self.String()
		h, ok, err := cs.Manifest(req.Key.String(), func(maker string, epoch uint64) bool {
			if maker == "" {
				maker = self
			}
			for _, p := range req.Allow {
				if string(p.Node) == maker && p.Epoch == epoch {
					return true
				}
			}
			return false
		})
		if err != nil {
			return fail(err)
		}
		if !ok {
			return ckReply{}
		}
		if h.From == "" {
			h.From = self
		}
		return ckReply{Found: true, Seq: h.M.Seq, Manifest: h.Raw, From: h.From}
	case opGet:
		if !validChunkID(req.ID) {
			return fail(fmt.Errorf("id: invalid chunk id %q", clipID(req.ID)))
		}
		data, ok, err := cs.Get(req.ID)
		if err != nil {
			return fail(err)
		}
		return ckReply{Found: ok, Data: data}
	}
	return fail(fmt.Errorf("op: unknown operation %q", clipID(req.Op)))
}

// acceptManifest keeps a manifest peer from pushed if it is valid,
// belongs to key, binds its seq to its epoch, is complete here and is
// newer than the one held from that peer. Each peer's manifests are held
// apart (Store.Keep), so a peer that never ran the task cannot displace
// the genuine executor's; which one a resume takes is the resumer's
// decision (market.TaskSpec.MayResumeFrom).
func (s *Service) acceptManifest(from peer.ID, key *Key, raw []byte, now time.Time) (bool, error) {
	if err := key.validate(); err != nil {
		return false, err
	}
	if len(raw) > MaxKeptManifest {
		return false, fmt.Errorf("manifest: %d bytes exceeds %d", len(raw), MaxKeptManifest)
	}
	m, err := checkpoint.DecodeManifest(raw)
	if err != nil {
		return false, err
	}
	if !key.Matches(m) {
		return false, errors.New("manifest: job, task or replica differs from the key")
	}
	if m.Seq>>32 != m.Epoch {
		s.refused(RefusedManifest)
		return false, fmt.Errorf("manifest: seq %d is not of epoch %d", m.Seq, m.Epoch)
	}
	cs := s.cs
	lack, err := checkpoint.Missing(m, cs)
	if err != nil {
		return false, err
	}
	if len(lack) > 0 {
		return false, fmt.Errorf("manifest: %d chunks missing, first %s", len(lack), lack[0])
	}
	k, maker := key.String(), from.String()
	if _, ok, err := cs.manifests.Get(slot(k, maker)); err != nil {
		return false, err
	} else if !ok {
		if c, err := cs.count(); err != nil {
			return false, err
		} else if c >= maxHeldManifests {
			return false, fmt.Errorf("manifest: this node already keeps %d manifests", c)
		}
		if c, err := cs.countFrom(maker); err != nil {
			return false, err
		} else if c >= s.maxManifests {
			s.refused(RefusedManifests)
			return false, fmt.Errorf("manifest: this node already keeps %d manifests of yours", c)
		}
	}
	switch err := cs.Keep(k, maker, m, raw, now); {
	case errors.Is(err, ErrNotNewer):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// call sends one checkpoint request to p and returns its reply; a reply
// with Error set is returned as an error.
func (s *Service) call(ctx context.Context, p peer.ID, req ckRequest) (ckReply, error) {
	ctx, cancel := context.WithTimeout(ctx, ckCallTimeout)
	defer cancel()
	b, err := json.Marshal(req)
	if err != nil {
		return ckReply{}, err
	}
	if len(b) > maxCkFrame {
		return ckReply{}, fmt.Errorf("checkpoint %s request of %d bytes exceeds %d", req.Op, len(b), maxCkFrame)
	}
	st, err := s.h.NewStream(network.WithAllowLimitedConn(ctx, "checkpoints"), p, Protocol)
	if err != nil {
		return ckReply{}, err
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	w := bufio.NewWriter(st)
	if err := wire.WriteFrame(w, b); err != nil {
		_ = st.Reset()
		return ckReply{}, err
	}
	if err := w.Flush(); err != nil {
		_ = st.Reset()
		return ckReply{}, err
	}
	_ = st.CloseWrite()
	rb, err := wire.ReadFrame(bufio.NewReader(st), maxCkFrame)
	if err != nil {
		_ = st.Reset()
		return ckReply{}, err
	}
	var rep ckReply
	if err := decodeCk(rb, &rep); err != nil {
		return ckReply{}, fmt.Errorf("bad checkpoint reply: %w", err)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("peer %s: checkpoint %s: %s", p.ShortString(), req.Op, rep.Error)
	}
	return rep, nil
}
