package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/checkpoints"
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
func (x *Executor) resumeThenStart(ck *ckRun, id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result)) {
	x.beforeStart(id, ckResumeTimeout, func(ctx context.Context, p *pendingStart) {
		t0 := time.Now()
		m, from, err := x.restoreCheckpoint(ctx, ck)
		x.mu.Lock()
		cancelled := p.cancelled || x.stopping.Load()
		x.mu.Unlock()
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
		x.mu.Lock()
		defer x.mu.Unlock()
		delete(x.pending, id)
		if p.cancelled {
			reason := "cancelled"
			if p.reason != "" {
				reason += ": " + p.reason
			}
			go done(runtime.Result{ExitCode: -1, Cancelled: true, Reason: reason, Finished: time.Now()})
			return
		}
		x.launchLocked(id, spec, sink, done, ck)
	})
}

// beforeStart runs prepare off the task goroutine, registered as a
// pending start (a stop marks it cancelled and ends its context), with
// timeout; prepare then starts the attempt or reports it.
func (x *Executor) beforeStart(id string, timeout time.Duration, prepare func(ctx context.Context, p *pendingStart)) {
	ctx, cancel := context.WithTimeout(x.ctx, timeout)
	p := &pendingStart{abort: cancel}
	x.mu.Lock()
	x.pending[id] = p
	x.mu.Unlock()
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		defer cancel()
		prepare(ctx, p)
	}()
}

// restoreCheckpoint finds the newest manifest of the attempt's task
// replica (this node's store and the closest peers, or every live peer
// when none of those has one), fetches the chunks this node lacks and
// restores them into the checkpoint directory. It returns nil, nil when
// no manifest exists anywhere.
func (x *Executor) restoreCheckpoint(ctx context.Context, ck *ckRun) (*checkpoint.Manifest, peer.ID, error) {
	key := ck.key.String()
	cs := x.ck.Store()
	cs.RLock()
	defer cs.RUnlock()
	// Only a snapshot made here, or by an earlier placement its manager
	// recorded, may seed the attempt (market.TaskSpec.MayResumeFrom).
	self := market.NodeID(x.ck.Self().String())
	may := func(maker market.NodeID, epoch uint64) bool { return ck.task.MayResumeFrom(self, maker, epoch) }
	allow := append(slices.Clone(ck.task.Previous), market.Placement{Node: self, Epoch: ck.epoch})
	var cands []checkpoints.Found
	if h, ok, err := cs.Manifest(key, func(from string, epoch uint64) bool {
		if from == "" {
			return epoch <= ck.epoch
		}
		return may(market.NodeID(from), epoch)
	}); err != nil {
		log.Warnw("read local checkpoint manifest", "task", key, "err", err)
	} else if ok {
		maker := market.NodeID(h.From)
		if maker == "" {
			maker = self
		}
		cands = append(cands, checkpoints.Found{M: h.M, Raw: h.Raw, Maker: maker})
	}
	closest := x.opts.Peers(key, ckReplicas, nil)
	cands = append(cands, x.ck.AskManifests(ctx, ck.key, closest, allow, may)...)
	if len(cands) == 0 {
		skip := map[peer.ID]bool{}
		for _, p := range closest {
			skip[p] = true
		}
		cands = x.ck.AskManifests(ctx, ck.key, x.opts.Peers(key, -1, skip), allow, may)
	}
	if len(cands) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		return nil, "", nil
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.M.Seq > best.M.Seq {
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
	add(best.From)
	for _, c := range cands {
		add(c.From)
	}
	for _, p := range x.opts.Peers(key, -1, nil) {
		add(p)
	}
	missing, err := checkpoint.Missing(best.M, cs)
	if err != nil {
		return nil, "", err
	}
	for _, id := range missing {
		if err := x.ck.FetchChunk(ctx, id, sources); err != nil {
			return nil, "", fmt.Errorf("seq %d: %w", best.M.Seq, err)
		}
	}
	if err := checkpoint.Restore(ctx, best.M, ck.dir, cs); err != nil {
		return nil, "", err
	}
	if best.From != "" {
		maker := string(best.Maker)
		if best.Maker == self {
			maker = ""
		}
		if err := cs.Keep(key, maker, best.M, best.Raw, time.Now()); err != nil && !errors.Is(err, checkpoints.ErrNotNewer) {
			log.Warnw("keep fetched checkpoint manifest", "task", key, "err", err)
		}
	}
	// The snapshot goroutine starts from what was restored: an unchanged
	// directory is not kept again, only pushed where it is missing.
	ck.content, ck.m, ck.raw, ck.kept = contentID(best.M), best.M, best.Raw, time.Now()
	return &best.M, best.From, nil
}
