package data

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/runtime/checkpoint"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// ErrNoHolder means no peer asked had a good copy of the data.
var ErrNoHolder = errors.New("no live holder has it")

// session is one stream to a peer, for a series of requests.
type session struct {
	st network.Stream
	r  *bufio.Reader
	w  *bufio.Writer
}

func (s *Service) open(ctx context.Context, p peer.ID) (*session, error) {
	st, err := s.h.NewStream(ctx, p, Protocol)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	return &session{st: st, r: bufio.NewReaderSize(st, 256<<10), w: bufio.NewWriterSize(st, 64<<10)}, nil
}

func (ss *session) close() { _ = ss.st.Close() }

func (ss *session) ask(q request) (reply, error) {
	if err := writeJSON(ss.w, q); err != nil {
		return reply{}, err
	}
	if err := ss.w.Flush(); err != nil {
		return reply{}, err
	}
	b, err := readFrame(ss.r, maxRequest, nil)
	if err != nil {
		return reply{}, err
	}
	var r reply
	return r, decodeStrict(b, &r)
}

// manifestFrom fetches and checks a manifest from p.
func (s *Service) manifestFrom(ss *session, id string) ([]byte, error) {
	r, err := ss.ask(request{Op: "manifest", ID: id})
	if err != nil {
		return nil, err
	}
	if !r.Found {
		return nil, errors.New("does not hold it")
	}
	if r.Size <= 0 || r.Size > checkpoint.MaxManifestSize {
		return nil, fmt.Errorf("manifest of %d bytes", r.Size)
	}
	raw := make([]byte, 0, r.Size)
	for len(raw) < r.Size {
		part, err := readFrame(ss.r, partSize, nil)
		if err != nil {
			return nil, err
		}
		raw = append(raw, part...)
	}
	if len(raw) != r.Size || checkpoint.ID(raw) != id {
		return nil, errors.New("the manifest sent does not hash to its ID")
	}
	return raw, nil
}

// chunksFrom fetches ids from p, storing each that hashes right; it
// returns those it did not get (not held there, or damaged).
func (s *Service) chunksFrom(ss *session, ids []string) (left []string, err error) {
	// Requests go out ahead of the replies, so the peer never waits for
	// the next one.
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < len(ids); i += maxChunkIDs {
			if err := writeJSON(ss.w, request{Op: "chunks", IDs: ids[i:min(len(ids), i+maxChunkIDs)]}); err != nil {
				errc <- err
				return
			}
		}
		errc <- ss.w.Flush()
	}()
	buf := make([]byte, checkpoint.MaxChunkSize)
	for i, id := range ids {
		b, err := readFrame(ss.r, checkpoint.MaxChunkSize, buf)
		if err != nil {
			return append(left, ids[i:]...), err
		}
		if len(b) == 0 {
			left = append(left, id)
			continue
		}
		if err := s.st.Put(id, b); err != nil {
			log.Warnw("a peer sent a damaged chunk", "peer", ss.st.Conn().RemotePeer(), "chunk", id, "err", err)
			left = append(left, id)
			continue
		}
		s.Fetched.Add(int64(len(b)))
	}
	return left, <-errc
}

// Fetch makes this node hold manifest id and all its chunks, fetching
// what it lacks from holders in order (each chunk from the first that
// has a good copy), and keeps it with rec. A rec.Bytes above zero bounds
// the manifest's bytes (what an offer said). It returns the manifest.
func (s *Service) Fetch(ctx context.Context, id string, holders []peer.ID, rec Record) (checkpoint.Manifest, error) {
	s.st.RLock()
	defer s.st.RUnlock()
	if m, _, _, ok, err := s.st.Manifest(id); err == nil && ok {
		lack, err := checkpoint.Missing(m, s.st)
		if err == nil && len(lack) == 0 {
			rec.Bytes = m.TotalBytes
			if _, err := s.st.Keep(mustEncode(m), rec); err != nil {
				return m, err
			}
			return m, nil
		}
	}
	var raw []byte
	var problems []string
	var lack []string
	var m checkpoint.Manifest
	for _, p := range holders {
		if p == s.h.ID() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return checkpoint.Manifest{}, err
		}
		ss, err := s.open(ctx, p)
		if err != nil {
			problems = append(problems, shortPeer(p)+": "+err.Error())
			continue
		}
		if raw == nil {
			got, err := s.manifestFrom(ss, id)
			if err != nil {
				problems = append(problems, shortPeer(p)+": "+err.Error())
				ss.close()
				continue
			}
			if m, err = checkpoint.DecodeManifest(got); err != nil {
				problems = append(problems, shortPeer(p)+": "+err.Error())
				ss.close()
				continue
			}
			if rec.Bytes > 0 && m.TotalBytes > rec.Bytes {
				ss.close()
				return checkpoint.Manifest{}, fmt.Errorf("manifest %.12s… lists %d bytes, more than the %d offered", id, m.TotalBytes, rec.Bytes)
			}
			raw = got
			if lack, err = checkpoint.Missing(m, s.st); err != nil {
				ss.close()
				return checkpoint.Manifest{}, err
			}
		}
		if len(lack) > 0 {
			before := len(lack)
			lack, err = s.chunksFrom(ss, lack)
			if err != nil {
				problems = append(problems, shortPeer(p)+": "+err.Error())
			} else if len(lack) > 0 {
				problems = append(problems, fmt.Sprintf("%s: lacked or sent damaged %d of %d chunks", shortPeer(p), len(lack), before))
			}
		}
		ss.close()
		if len(lack) == 0 {
			break
		}
	}
	if raw == nil || len(lack) > 0 {
		why := "no holder answered"
		if len(problems) > 0 {
			why = strings.Join(problems, "; ")
		}
		if raw != nil {
			why = fmt.Sprintf("%d chunks missing (%s)", len(lack), why)
		}
		return checkpoint.Manifest{}, fmt.Errorf("%w: manifest %.12s…: %s", ErrNoHolder, id, why)
	}
	rec.Bytes = m.TotalBytes
	if _, err := s.st.Keep(raw, rec); err != nil {
		return m, err
	}
	return m, nil
}

func mustEncode(m checkpoint.Manifest) []byte {
	b, _ := checkpoint.EncodeManifest(m)
	return b
}

func shortPeer(p peer.ID) string {
	s := p.String()
	if len(s) > 12 {
		return s[len(s)-8:]
	}
	return s
}

// Offer asks p to keep manifest id (held here) for ttl: p fetches what it
// lacks from this node. It returns once p has it, or why not.
func (s *Service) Offer(ctx context.Context, p peer.ID, id string, rec Record, ttl time.Duration) error {
	ss, err := s.open(ctx, p)
	if err != nil {
		return err
	}
	defer ss.close()
	r, err := ss.ask(request{Op: "offer", ID: id, Job: rec.Job, Kind: rec.Kind, Bytes: rec.Bytes, TTL: int64(ttl / time.Second)})
	switch {
	case err != nil:
		return err
	case r.Error != "":
		return errors.New(r.Error)
	case !r.Stored:
		return errors.New("not stored")
	}
	return nil
}

// Replicate offers manifest id to peers, in order and two at a time,
// until want of them keep it; it returns those that do.
func (s *Service) Replicate(ctx context.Context, id string, rec Record, ttl time.Duration, peers []peer.ID, want int) []peer.ID {
	var kept []peer.ID
	for i := 0; i < len(peers) && len(kept) < want; {
		n := min(want-len(kept), len(peers)-i)
		var wg sync.WaitGroup
		ok := make([]bool, n)
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Offer(ctx, peers[i+k], id, rec, ttl); err != nil {
					log.Infow("data copy refused", "peer", peers[i+k], "manifest", id, "err", err)
					return
				}
				ok[k] = true
			}()
		}
		wg.Wait()
		for k := range n {
			if ok[k] {
				kept = append(kept, peers[i+k])
			}
		}
		i += n
	}
	return kept
}
