package admission

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Gater is the node's connection gater. It refuses connections to and from
// blocked peers; the testnet uses it to cut chosen peer pairs (partitions),
// and operators may use it to ban a peer. The zero value allows everyone.
type Gater struct {
	mu      sync.RWMutex
	blocked map[peer.ID]bool
	until   map[peer.ID]time.Time // refused for a while (admission)
}

// BlockFor refuses connections with p for d.
func (g *Gater) BlockFor(p peer.ID, d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.until == nil {
		g.until = map[peer.ID]time.Time{}
	}
	g.until[p] = time.Now().Add(d)
}

// Block refuses all future connections with p. Existing connections are
// left to the caller to close.
func (g *Gater) Block(p peer.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.blocked == nil {
		g.blocked = map[peer.ID]bool{}
	}
	g.blocked[p] = true
}

// Unblock allows connections with p again.
func (g *Gater) Unblock(p peer.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.blocked, p)
}

// Blocked reports whether p is blocked.
func (g *Gater) Blocked(p peer.ID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.blocked[p] || time.Now().Before(g.until[p])
}

// InterceptPeerDial refuses dials to blocked peers.
func (g *Gater) InterceptPeerDial(p peer.ID) bool { return !g.Blocked(p) }

// InterceptAddrDial refuses dials to blocked peers.
func (g *Gater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return !g.Blocked(p) }

// InterceptAccept allows every inbound connection; the peer is checked once
// it is authenticated.
func (g *Gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured refuses authenticated connections from blocked peers.
func (g *Gater) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return !g.Blocked(p)
}

// InterceptUpgraded allows every upgraded connection.
func (g *Gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
