package admission

import (
	"context"
	"errors"
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market/auth"
)

// RevocationsTopic is the topic revocations spread on in network name.
func RevocationsTopic(network string) string { return "agora/" + network + "/revocations/1" }

// Topic carries revocations between nodes.
type Topic struct {
	a     *Admission
	topic *pubsub.Topic
	sub   *pubsub.Subscription
}

// JoinRevocations joins the revocations topic of network on ps: every
// revocation that verifies is taken (Revoke) and relayed, any other
// dropped.
func (a *Admission) JoinRevocations(ctx context.Context, ps *pubsub.PubSub, network string) (*Topic, error) {
	name := RevocationsTopic(network)
	if err := ps.RegisterTopicValidator(name, a.validateRevocation); err != nil {
		return nil, fmt.Errorf("admission: register validator: %w", err)
	}
	t, err := ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("admission: join %s: %w", name, err)
	}
	sub, err := t.Subscribe()
	if err != nil {
		return nil, fmt.Errorf("admission: subscribe %s: %w", name, err)
	}
	go func() {
		for {
			if _, err := sub.Next(ctx); err != nil {
				return // taken by the validator; nothing else to do
			}
		}
	}()
	return &Topic{a: a, topic: t, sub: sub}, nil
}

// validateRevocation takes a revocation as it arrives; a message that
// does not verify is rejected (its sender's score falls), one refused
// only for when it is checked (auth.ErrUntimely) just dropped.
func (a *Admission) validateRevocation(_ context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	r, err := auth.DecodeRevocation(msg.Data)
	if err == nil {
		_, err = a.Revoke(r)
	}
	if err != nil {
		a.opts.Refused(ReasonRevocation)
		log.Debugw("revocation dropped", "from", msg.GetFrom(), "err", err)
		if errors.Is(err, auth.ErrUntimely) {
			return pubsub.ValidationIgnore // another clock, or a full book: not the relay's fault
		}
		return pubsub.ValidationReject
	}
	return pubsub.ValidationAccept
}

// Publish spreads a revocation (which the caller has taken) to the
// network.
func (t *Topic) Publish(ctx context.Context, r auth.Revocation) error {
	return t.topic.Publish(ctx, r.Encode())
}

// Close leaves the topic.
func (t *Topic) Close() {
	t.sub.Cancel()
	_ = t.topic.Close()
}
