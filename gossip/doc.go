// Package gossip owns Agora's pubsub plane: the resource adverts every node
// publishes on agora/<network>/adverts/1, their encoding and validation, and
// the membership view built from them (who is alive and what they offer).
//
// The membership View is pure: it is driven by adverts and an injected
// clock, so the simulator can use it without a network. Service is the
// libp2p adapter around it: it joins the topic, validates inbound adverts,
// publishes the local one on an interval and at once on a large change.
//
// This package must not import market, runtime or store.
package gossip
