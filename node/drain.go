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

// Drain implements api.Backend: drain, for an admin in a network with
// an authority.
func (n *Node) Drain(ctx context.Context) error {
	if n.trust != nil {
		if _, err := n.authorize(api.Credential(ctx), "", "", auth.ActDrain); err != nil {
			return err
		}
	}
	return n.drain(ctx)
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
