// Package netns builds network topologies for tests out of Linux network
// namespaces the test itself makes and removes: a public network, NAT
// routers that masquerade and drop unsolicited inbound traffic
// (nftables), and edge sites behind them. Every address is inside these
// namespaces, so tests that use them may turn on AutoNAT, relays and hole
// punching without traffic leaving the machine. It needs root, iproute2
// and nftables, and skips the test naming what is missing.
package netns
