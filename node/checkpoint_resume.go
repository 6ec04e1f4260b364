package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// ckResumeTimeout bounds finding, fetching and restoring a checkpoint
// before a resumed attempt starts; past it the attempt starts from
// scratch.
const ckResumeTimeout = 10 * time.Second

// resumeThenStart restores the attempt's newest checkpoint off the event
// loop, then starts the process with AGORA_RESUMED=1, or from scratch
// when there is none or it cannot be had in time. A stop arriving
// meanwhile (stopTask) means the process never starts; done reports the
// attempt as cancelled instead, so the market sees exactly one exit.
func (n *Node) resumeThenStart(ck *ckRun, id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result)) {
	ctx, cancel := context.WithTimeout(n.ctx, ckResumeTimeout)
	p := &pendingStart{abort: cancel}
	n.ck.mu.Lock()
	n.ck.pending[id] = p
	n.ck.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer cancel()
		t0 := time.Now()
		m, from, err := n.restoreCheckpoint(ctx, ck)
		n.ck.mu.Lock()
		cancelled := p.cancelled || n.stopping.Load()
		n.ck.mu.Unlock()
		switch {
		case cancelled:
			// Not starting: leave the directory as it is.
		case err == nil && m != nil:
			spec.ExtraEnv = maps.Clone(spec.ExtraEnv)
			if spec.ExtraEnv == nil {
				spec.ExtraEnv = map[string]string{}
			}
			spec.ExtraEnv["AGORA_RESUMED"] = "1"
			src := "local store"
			if from != "" {
				src = from.String()
			}
			log.Infow("resuming task from checkpoint", "task", ck.key.String(), "epoch", ck.epoch, "seq", m.Seq,
				"from_epoch", m.Epoch, "bytes", m.TotalBytes, "source", src, "took", time.Since(t0))
		default:
			if err != nil {
				log.Warnw("checkpoint restore failed; starting from scratch", "task", ck.key.String(), "took", time.Since(t0), "err", err)
			} else {
				log.Infow("no checkpoint found; starting from scratch", "task", ck.key.String(), "took", time.Since(t0))
			}
			if err := os.RemoveAll(ck.dir); err != nil {
				log.Warnw("clear checkpoint dir", "dir", ck.dir, "err", err)
			}
			_ = os.MkdirAll(ck.dir, 0o700)
		}
		n.ck.mu.Lock()
		defer n.ck.mu.Unlock()
		delete(n.ck.pending, id)
		if p.cancelled {
			reason := "cancelled"
			if p.reason != "" {
				reason += ": " + p.reason
			}
			go done(runtime.Result{ExitCode: -1, Cancelled: true, Reason: reason, Finished: time.Now()})
			return
		}
		n.launchLocked(id, spec, sink, done, ck)
	}()
}

// ckCandidate is a manifest found for a resume, and who had it ("" for
// this node's store).
type ckCandidate struct {
	m    checkpoint.Manifest
	raw  []byte
	from peer.ID
}

// restoreCheckpoint finds the newest manifest of the attempt's task
// replica (this node's store and the closest peers, or every live peer
// when none of those has one), fetches the chunks this node lacks and
// restores them into the checkpoint directory. It returns nil, nil when
// no manifest exists anywhere.
func (n *Node) restoreCheckpoint(ctx context.Context, ck *ckRun) (*checkpoint.Manifest, peer.ID, error) {
	key := ck.key.String()
	cs := n.ck.cs
	cs.gcMu.RLock()
	defer cs.gcMu.RUnlock()
	var cands []ckCandidate
	if m, raw, ok, err := cs.manifest(key); err != nil {
		log.Warnw("read local checkpoint manifest", "task", key, "err", err)
	} else if ok {
		cands = append(cands, ckCandidate{m: m, raw: raw})
	}
	closest := n.closestPeers(key, ckReplicas, nil)
	cands = append(cands, n.askManifests(ctx, ck.key, closest)...)
	if len(cands) == 0 {
		skip := map[peer.ID]bool{}
		for _, p := range closest {
			skip[p] = true
		}
		cands = n.askManifests(ctx, ck.key, n.closestPeers(key, -1, skip))
	}
	if len(cands) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		return nil, "", nil
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.m.Seq > best.m.Seq {
			best = c
		}
	}
	// Chunks come from whoever had the chosen manifest, then from the
	// others that had one, then from any live peer.
	var sources []peer.ID
	seen := map[peer.ID]bool{"": true}
	add := func(p peer.ID) {
		if !seen[p] {
			seen[p] = true
			sources = append(sources, p)
		}
	}
	add(best.from)
	for _, c := range cands {
		add(c.from)
	}
	for _, p := range n.closestPeers(key, -1, nil) {
		add(p)
	}
	missing, err := checkpoint.Missing(best.m, cs)
	if err != nil {
		return nil, "", err
	}
	for _, id := range missing {
		if err := n.fetchChunk(ctx, id, sources); err != nil {
			return nil, "", fmt.Errorf("seq %d: %w", best.m.Seq, err)
		}
	}
	if err := checkpoint.Restore(best.m, ck.dir, cs); err != nil {
		return nil, "", err
	}
	if best.from != "" {
		if err := cs.keep(key, best.m, best.raw, time.Now()); err != nil && !errors.Is(err, errNotNewer) {
			log.Warnw("keep fetched checkpoint manifest", "task", key, "err", err)
		}
	}
	// The snapshot goroutine starts from what was restored: an unchanged
	// directory is not kept again, only pushed where it is missing.
	ck.content, ck.m, ck.raw, ck.kept = contentID(best.m), best.m, best.raw, time.Now()
	return &best.m, best.from, nil
}

// askManifests asks peers, in parallel, for their newest manifest of key
// and returns the valid ones found.
func (n *Node) askManifests(ctx context.Context, key ckKey, peers []peer.ID) []ckCandidate {
	var mu sync.Mutex
	var out []ckCandidate
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := n.ckCall(ctx, p, ckRequest{Op: opGetManifest, Key: &key})
			if err != nil {
				log.Debugw("ask checkpoint manifest", "peer", p, "err", err)
				return
			}
			if !rep.Found {
				return
			}
			m, err := checkpoint.DecodeManifest(rep.Manifest)
			if err == nil && !key.matches(m) {
				err = errors.New("manifest of another task")
			}
			if err == nil && len(rep.Manifest) > maxKeptManifest {
				err = fmt.Errorf("manifest of %d bytes", len(rep.Manifest))
			}
			if err != nil {
				log.Infow("ignoring a bad checkpoint manifest", "peer", p, "err", err)
				return
			}
			mu.Lock()
			out = append(out, ckCandidate{m: m, raw: rep.Manifest, from: p})
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// fetchChunk gets one chunk from the first source that has it intact.
func (n *Node) fetchChunk(ctx context.Context, id string, sources []peer.ID) error {
	var last error = errors.New("no peer to ask")
	for _, p := range sources {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := n.ckCall(ctx, p, ckRequest{Op: opGet, ID: id})
		switch {
		case err != nil:
			last = err
		case !rep.Found:
			last = fmt.Errorf("peer %s lacks it", p.ShortString())
		default:
			if err := n.ck.cs.Put(id, rep.Data); err != nil {
				last = err
				continue
			}
			return nil
		}
	}
	return fmt.Errorf("fetch chunk %s: %w", id, last)
}
