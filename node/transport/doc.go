// Package transport carries market messages between nodes: each message
// to one node over a long-lived stream per peer and direction
// (/agora/market/1.0.0), a broadcast call for bids on the network's jobs
// topic. It is I/O only: what a message means, and whether its claimed
// sender is believed, is the market's (market.Msg.Sender is checked
// against the stream's authenticated peer there). It must never import
// package node.
package transport
