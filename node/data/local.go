package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/runtime/checkpoint"
)

// What the local API asks of a node's data: uploads from its client, and
// the data a client reads back (agora get).

// Missing says which of ids this node lacks.
func (s *Service) Missing(ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		if !ValidID(id) {
			return nil, fmt.Errorf("%.80q is not a chunk ID", id)
		}
		ok, err := s.st.Has(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// PutChunk stores an uploaded chunk, checking its hash.
func (s *Service) PutChunk(id string, b []byte) error {
	if err := s.st.s.Writable(); err != nil {
		return err
	}
	return s.st.Put(id, b)
}

// KeepUpload keeps an uploaded manifest, whose chunks must all be here,
// for ttl, and copies it to the peers closest to it (Options.Peers); it
// returns its ID and the peers that keep a copy.
func (s *Service) KeepUpload(ctx context.Context, raw []byte, ttl time.Duration) (string, []string, error) {
	m, err := checkpoint.DecodeManifest(raw)
	if err != nil {
		return "", nil, err
	}
	lack, err := checkpoint.Missing(m, s.st)
	if err != nil {
		return "", nil, err
	}
	if len(lack) > 0 {
		return "", nil, fmt.Errorf("%d of its chunks were not uploaded", len(lack))
	}
	rec := Record{Kind: KindUpload, Bytes: m.TotalBytes, Expires: time.Now().Add(min(ttl, MaxRetention))}
	id, err := s.st.Keep(raw, rec)
	if err != nil {
		return "", nil, err
	}
	var holders []string
	if s.opts.Peers != nil {
		for _, p := range s.Replicate(ctx, id, rec, min(ttl, MaxRetention), s.opts.Peers("data/"+id, -1), max(s.opts.Replicas, 0)) {
			holders = append(holders, p.String())
		}
	}
	return id, holders, nil
}

// Raw returns a kept manifest's encoding.
func (s *Service) Raw(id string) ([]byte, bool, error) {
	_, raw, _, ok, err := s.st.Manifest(id)
	return raw, ok, err
}

// Chunk returns a chunk held here.
func (s *Service) Chunk(id string) ([]byte, bool, error) { return s.st.Get(id) }

// FetchFor makes this node hold a manifest and its chunks for a client
// that reads them back, from holders (peer IDs) and then the peers
// closest to key.
func (s *Service) FetchFor(ctx context.Context, id, key string, holders []string) (checkpoint.Manifest, error) {
	if !ValidID(id) {
		return checkpoint.Manifest{}, errors.New("not a manifest ID")
	}
	var ps []peer.ID
	seen := map[peer.ID]bool{}
	for _, h := range holders {
		if p, err := peer.Decode(h); err == nil && !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	if s.opts.Peers != nil {
		for _, p := range s.opts.Peers(key, -1) {
			if !seen[p] {
				ps = append(ps, p)
			}
		}
	}
	return s.Fetch(ctx, id, ps, Record{Kind: KindCache, Expires: time.Now().Add(time.Hour)})
}

// Complete reports whether a manifest and all its chunks are held here.
func (s *Service) Complete(id string) bool { return s.st.Complete(id) }
