package transport

import (
	"encoding/json"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/fairshare"
)

// UsageTopic is the pubsub topic of the nodes' full fair-share usage
// summaries in a network (docs/protocol.md).
func UsageTopic(network string) string { return "agora/" + network + "/usage/1" }

// UsageDeltaTopic is the topic of the deltas between them. Deltas have
// a topic of their own so that a node of a release before them, which
// reads usage/1 only and would take a delta for a full summary, never
// sees one.
func UsageDeltaTopic(network string) string { return "agora/" + network + "/usage-delta/1" }

// maxUsageBytes bounds a usage summary on the wire: MaxUsers users of
// long names.
const maxUsageBytes = 512 << 10

// usageValidator accepts a message that is the JSON of a usage summary
// of its publisher's (GossipSub's author signature covers it), a delta
// or a full one as the topic carries, from an admitted peer; whether
// the market keeps it is the market's to say.
func (t *Transport) usageValidator(delta bool) func(*pubsub.Message) pubsub.ValidationResult {
	return func(m *pubsub.Message) pubsub.ValidationResult {
		if len(m.Data) > maxUsageBytes {
			return pubsub.ValidationReject
		}
		var s fairshare.Summary
		if err := json.Unmarshal(m.Data, &s); err != nil || s.Node != m.GetFrom().String() || s.Delta() != delta {
			return pubsub.ValidationReject
		}
		if t.opts.Admitted != nil && !t.opts.Admitted(m.GetFrom()) {
			return pubsub.ValidationIgnore
		}
		m.ValidatorData = market.UsageSummary{Summary: s}
		return pubsub.ValidationAccept
	}
}

// joinUsage subscribes to the peers' usage summaries and deltas.
func (t *Transport) joinUsage(ps *pubsub.PubSub) (err error) {
	if t.usage, err = t.join(ps, UsageTopic(t.opts.Network), t.usageValidator(false)); err != nil {
		return err
	}
	t.usageDelta, err = t.join(ps, UsageDeltaTopic(t.opts.Network), t.usageValidator(true))
	return err
}

// PublishUsage publishes this node's usage summary, off the caller's
// goroutine: a full one on the usage topic, a delta on the deltas'.
func (t *Transport) PublishUsage(s market.UsageSummary) {
	b, err := json.Marshal(s.Summary)
	if err != nil {
		log.Errorw("encode usage summary", "err", err)
		return
	}
	topic := t.usage
	if s.Delta() {
		topic = t.usageDelta
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return
	}
	t.wg.Go(func() {
		if err := topic.Publish(t.ctx, b); err != nil && t.ctx.Err() == nil {
			log.Debugw("publish usage summary", "err", err)
		}
	})
}
