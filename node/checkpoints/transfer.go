package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// PushTo sends p the chunks of m it lacks, then m itself. A manifest
// refused for missing chunks (collected meanwhile) is pushed once more.
func (s *Service) PushTo(ctx context.Context, p peer.ID, key Key, m checkpoint.Manifest, raw []byte) error {
	ids := m.ChunkIDs()
	for attempt := 0; ; attempt++ {
		var lack []string
		for i := 0; i < len(ids); i += maxCkIDs {
			part := ids[i:min(i+maxCkIDs, len(ids))]
			rep, err := s.call(ctx, p, ckRequest{Op: opMissing, IDs: part})
			if err != nil {
				return err
			}
			asked := make(map[string]bool, len(part))
			for _, id := range part {
				asked[id] = true
			}
			for _, id := range rep.Missing {
				if asked[id] {
					lack = append(lack, id)
					asked[id] = false
				}
			}
		}
		for _, id := range lack {
			data, ok, err := s.cs.Get(id)
			if err == nil && !ok {
				err = fmt.Errorf("chunk %s is not held here", id)
			}
			if err != nil {
				return err
			}
			if _, err := s.call(ctx, p, ckRequest{Op: opPut, ID: id, Data: data}); err != nil {
				return err
			}
		}
		_, err := s.call(ctx, p, ckRequest{Op: opManifest, Key: &key, Manifest: raw})
		if err == nil || attempt == 1 || !strings.Contains(err.Error(), "chunks missing") {
			return err
		}
	}
}

// Found is a manifest found for a resume, who had it ("" for this node's
// store) and who made it.
type Found struct {
	M     checkpoint.Manifest
	Raw   []byte
	From  peer.ID
	Maker market.NodeID
}

// AskManifests asks peers, in parallel, for their newest manifest of key
// made by one of the placements in allow, and returns the valid ones
// found that may seed the resume (may: market.TaskSpec.MayResumeFrom).
func (s *Service) AskManifests(ctx context.Context, key Key, peers []peer.ID, allow []market.Placement, may func(maker market.NodeID, epoch uint64) bool) []Found {
	var mu sync.Mutex
	var out []Found
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := s.call(ctx, p, ckRequest{Op: opGetManifest, Key: &key, Allow: allow})
			if err != nil {
				log.Debugw("ask checkpoint manifest", "peer", p, "err", err)
				return
			}
			if !rep.Found {
				return
			}
			m, err := checkpoint.DecodeManifest(rep.Manifest)
			if err == nil && !key.Matches(m) {
				err = errors.New("manifest of another task")
			}
			if err == nil && len(rep.Manifest) > MaxKeptManifest {
				err = fmt.Errorf("manifest of %d bytes", len(rep.Manifest))
			}
			if err == nil && (m.Seq>>32 != m.Epoch || !may(market.NodeID(rep.From), m.Epoch)) {
				err = fmt.Errorf("manifest made by %s at epoch %d, not a placement of the task", rep.From, m.Epoch)
			}
			if err != nil {
				log.Infow("ignoring a bad checkpoint manifest", "peer", p, "err", err)
				return
			}
			mu.Lock()
			out = append(out, Found{M: m, Raw: rep.Manifest, From: p, Maker: market.NodeID(rep.From)})
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// FetchChunk gets one chunk from the first source that has it intact.
func (s *Service) FetchChunk(ctx context.Context, id string, sources []peer.ID) error {
	var last error = errors.New("no peer to ask")
	for _, p := range sources {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := s.call(ctx, p, ckRequest{Op: opGet, ID: id})
		switch {
		case err != nil:
			last = err
		case !rep.Found:
			last = fmt.Errorf("peer %s lacks it", p.ShortString())
		default:
			if err := s.cs.Put(id, rep.Data); err != nil {
				last = err
				continue
			}
			return nil
		}
	}
	return fmt.Errorf("fetch chunk %s: %w", id, last)
}
