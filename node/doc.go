// Package node is Agora's composition root: it turns a Config into a running
// node by opening the store, loading the identity, discovering resources,
// building the libp2p host and DHT, starting the gossip plane and serving the
// local HTTP API. It owns lifecycle (start, graceful stop) and wires the
// adapters around the pure market core.
//
// Everything network-facing defaults to loopback: listen addresses on
// 127.0.0.1, the API on 127.0.0.1:7700, a DHT in server mode under the
// /agora protocol prefix with only the configured bootstrap peers, and no
// mDNS, AutoNAT probing, hole punching or relays unless a flag enables them.
package node
