package node

import (
	"context"
	"fmt"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/api"
)

// drainTimeout bounds how long a drain waits for running tasks to stop
// (their SIGTERM grace plus time to report).
const drainTimeout = 15 * time.Second

// drainedMeta is the store's meta key that keeps an operator's drain
// across restarts, as Slurm keeps a drained node drained: a restart must
// not put a node back to work that its operator took out of it.
const drainedMeta = "drained"

// Drain implements api.Backend: drain, for an admin in a network with
// an authority. Unlike the drain a graceful stop makes, it is kept
// until Undrain.
func (n *Node) Drain(ctx context.Context) error {
	if n.trust != nil {
		if _, err := n.authorize(api.Credential(ctx), "", "", auth.ActDrain); err != nil {
			return err
		}
	}
	if err := n.store.PutMeta(drainedMeta, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("drain: keep the drained state: %w", err)
	}
	return n.drain(ctx)
}

// Undrain implements api.Backend: the node takes work again, for an
// admin in a network with an authority.
func (n *Node) Undrain(ctx context.Context) error {
	if n.trust != nil {
		if _, err := n.authorize(api.Credential(ctx), "", "", auth.ActUndrain); err != nil {
			return err
		}
	}
	if err := n.call(func() { n.mkt.Undrain(time.Now()) }); err != nil {
		return err
	}
	if err := n.store.DeleteMeta(drainedMeta); err != nil {
		return fmt.Errorf("undrain: forget the drained state: %w", err)
	}
	return nil
}

// Drained implements api.Backend: whether the node is drained, by an
// operator or by a graceful stop under way.
func (n *Node) Drained() bool { return n.soft.Load().Draining }

// keepDrained drains a node that its operator drained before it last
// stopped (Drain).
func (n *Node) keepDrained() error {
	if _, ok, err := n.store.GetMeta(drainedMeta); err != nil {
		return fmt.Errorf("node: read drained state: %w", err)
	} else if ok {
		log.Infow("drained by its operator before it stopped: taking no work until agora undrain")
		n.mkt.Drain(time.Now())
	}
	return nil
}

// drain stops this node taking work and hands its tasks back: queued ones
// at once, running ones after they stop (SIGTERM, grace, SIGKILL), each
// reported to its manager as preempted so it is placed elsewhere. It
// returns when the node holds no task or ctx ends. The node keeps serving
// status, logs and gossip; it is meant to be stopped afterwards.
func (n *Node) drain(ctx context.Context) error {
	if err := n.call(func() { n.mkt.Drain(time.Now()) }); err != nil {
		return err
	}
	for {
		var idle bool
		if err := n.call(func() { idle = n.mkt.Idle() }); err != nil {
			return err
		}
		if idle {
			// The last reports may still wait for their turn's commit;
			// then for the per-peer queues to empty.
			if err := n.syncEffects(ctx); err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			_ = n.tr.Flush(ctx, time.Second)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
