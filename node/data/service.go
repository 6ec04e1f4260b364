package data

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market/names"
	"github.com/agora-sched/agora/runtime/checkpoint"
	"github.com/agora-sched/agora/store"
)

var log = logging.Logger("data")

// Protocol moves task outputs and uploaded inputs between nodes
// (docs/protocol.md): a stream carries requests one after the other, each
// a frame (uvarint length, then bytes) of JSON, each answered in frames.
const Protocol = protocol.ID("/agora/data/1.0.0")

// Limits of the data protocol.
const (
	maxRequest  = 64 << 10 // a request frame
	maxChunkIDs = 256      // IDs in one chunks request
	// maxInbound is the most data streams served at once; more are reset.
	maxInbound = 32
	// serveIdle bounds the wait for a stream's next request.
	serveIdle = 30 * time.Second
	// MaxRetention bounds how long a node keeps data a peer offers.
	MaxRetention = 30 * 24 * time.Hour
)

type request struct {
	Op    string   `json:"op"`              // "manifest", "chunks", "offer"
	ID    string   `json:"id,omitempty"`    // manifest, offer
	IDs   []string `json:"ids,omitempty"`   // chunks
	Job   string   `json:"job,omitempty"`   // offer
	Kind  string   `json:"kind,omitempty"`  // offer
	Bytes int64    `json:"bytes,omitempty"` // offer
	TTL   int64    `json:"ttl_s,omitempty"` // offer: keep for this long
}

type reply struct {
	Found  bool   `json:"found,omitempty"`
	Size   int    `json:"size,omitempty"`
	Stored bool   `json:"stored,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Options configure a Service.
type Options struct {
	// MaxBytes bounds the data a node keeps for others (offers); 0: no
	// bound beyond the disk's.
	MaxBytes int64
	// Refused counts a refused request by reason (nil: not counted).
	Refused func(reason string)
	// Peers returns up to r live peers closest to key, nearest first
	// (every one when r < 0).
	Peers func(key string, r int) []peer.ID
	// Replicas is how many peers keep a copy of an upload.
	Replicas int
}

// Service serves this node's data to peers and fetches theirs.
type Service struct {
	h       host.Host
	st      *Store
	opts    Options
	inbound atomic.Int32
	// Moved counts the bytes fetched from peers and served to them.
	Fetched, Served atomic.Int64
}

// New registers the data protocol on h, serving what s holds.
func New(h host.Host, s *store.Store, opts Options) *Service {
	svc := &Service{h: h, st: NewStore(s), opts: opts}
	h.SetStreamHandler(Protocol, svc.handle)
	return svc
}

// Store is the data kept by this node (nil for a nil Service: a node
// not started yet).
func (s *Service) Store() *Store {
	if s == nil {
		return nil
	}
	return s.st
}

// Self is this node's peer ID.
func (s *Service) Self() peer.ID { return s.h.ID() }

func (s *Service) refuse(reason string) {
	if s.opts.Refused != nil {
		s.opts.Refused(reason)
	}
}

// writeFrame writes one frame.
func writeFrame(w io.Writer, b []byte) error {
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(b)))
	if _, err := w.Write(hdr[:n]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// readFrame reads one frame of at most limit bytes into buf's storage.
func readFrame(r *bufio.Reader, limit int, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("frame of %d bytes, over the limit of %d", n, limit)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(r, buf)
	return buf, err
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, b)
}

// handle serves one stream's requests until it ends or idles.
func (s *Service) handle(st network.Stream) {
	if s.inbound.Add(1) > maxInbound {
		s.inbound.Add(-1)
		s.refuse("data: too many streams")
		_ = st.Reset()
		return
	}
	defer s.inbound.Add(-1)
	defer st.Close()
	r := bufio.NewReaderSize(st, 64<<10)
	w := bufio.NewWriterSize(st, 256<<10)
	from := st.Conn().RemotePeer()
	for {
		_ = st.SetReadDeadline(time.Now().Add(serveIdle))
		b, err := readFrame(r, maxRequest, nil)
		if err != nil {
			return
		}
		_ = st.SetReadDeadline(time.Time{})
		var q request
		if err := decodeStrict(b, &q); err != nil {
			s.refuse("data: malformed request")
			_ = st.Reset()
			return
		}
		if err := s.serve(w, from, q); err != nil {
			log.Debugw("data request failed", "peer", from, "op", q.Op, "err", err)
			_ = st.Reset()
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// serve answers one request.
func (s *Service) serve(w io.Writer, from peer.ID, q request) error {
	switch q.Op {
	case "manifest":
		_, raw, _, ok, err := s.st.Manifest(q.ID)
		if err != nil || !ok {
			return writeJSON(w, reply{})
		}
		if err := writeJSON(w, reply{Found: true, Size: len(raw)}); err != nil {
			return err
		}
		for len(raw) > 0 {
			n := min(len(raw), partSize)
			if err := writeFrame(w, raw[:n]); err != nil {
				return err
			}
			raw = raw[n:]
		}
		return nil
	case "chunks":
		if len(q.IDs) > maxChunkIDs {
			return fmt.Errorf("%d chunk IDs, over the limit of %d", len(q.IDs), maxChunkIDs)
		}
		for _, id := range q.IDs {
			b, ok, err := s.st.Get(id)
			if err != nil || !ok {
				b = nil // an empty frame: not held
			}
			if err := writeFrame(w, b); err != nil {
				return err
			}
			s.Served.Add(int64(len(b)))
		}
		return nil
	case "offer":
		err := s.accept(from, q)
		if err != nil {
			s.refuse("data: offer refused")
			return writeJSON(w, reply{Error: err.Error()})
		}
		return writeJSON(w, reply{Stored: true})
	}
	return fmt.Errorf("unknown op %q", q.Op)
}

// accept takes a peer's offer to keep data: it fetches the manifest and
// the chunks it lacks from that peer, checking every hash, and keeps
// them for the offer's time (at most MaxRetention).
func (s *Service) accept(from peer.ID, q request) error {
	switch {
	case !ValidID(q.ID):
		return errors.New("id: not a manifest ID")
	case q.Kind != KindOutput && q.Kind != KindUpload:
		return fmt.Errorf("kind %q: want output or upload", q.Kind)
	case q.Job != "" && !names.JobID(q.Job):
		return errors.New("job: invalid")
	case q.Bytes < 0 || q.Bytes > checkpoint.MaxTotalBytes:
		return fmt.Errorf("bytes %d out of range", q.Bytes)
	case q.TTL <= 0:
		return errors.New("ttl_s: must be positive")
	}
	if s.opts.MaxBytes > 0 {
		use, err := s.st.Usage()
		if err != nil {
			return err
		}
		if total := use.Others; total+q.Bytes > s.opts.MaxBytes {
			return fmt.Errorf("this node keeps at most %d bytes of data for others (%d kept)", s.opts.MaxBytes, total)
		}
	}
	if err := s.st.s.Writable(); err != nil {
		return err
	}
	ttl := min(time.Duration(q.TTL)*time.Second, MaxRetention)
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout(q.Bytes))
	defer cancel()
	_, err := s.Fetch(ctx, q.ID, []peer.ID{from}, Record{Job: q.Job, Kind: q.Kind, From: from.String(), Bytes: max(q.Bytes, 1), Expires: time.Now().Add(ttl)})
	return err
}

// fetchTimeout allows a transfer of n bytes at 10 MB/s, and a minute.
func fetchTimeout(n int64) time.Duration {
	return time.Minute + time.Duration(n/(10<<20))*time.Second
}
