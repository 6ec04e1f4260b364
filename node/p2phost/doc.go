// Package p2phost builds a node's libp2p host: transports, security,
// the connection gater and resource manager, and — only when asked — the
// relay service, AutoNAT, relay reservations and hole punching that let
// nodes behind NAT take part (docs/operations.md, "Edge sites behind
// NAT").
package p2phost

import logging "github.com/ipfs/go-log/v2"

var log = logging.Logger("p2phost")
