package node

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// joinLoop connects to the bootstrap peers and the peers remembered from
// the last run, then keeps retrying while the node has no connections, so
// nodes may be started in any order; while it has some, it keeps dialling
// the bootstrap peers it is not connected to (every 5 s at most), so
// that a site cut off from them rejoins when the cut heals.
func (n *Node) joinLoop(boot []peer.AddrInfo) {
	defer n.wg.Done()
	known := append([]peer.AddrInfo(nil), boot...)
	known = append(known, n.rememberedPeers()...)
	bootstrapped := false
	delay := 250 * time.Millisecond
	for {
		if len(n.host.Network().Peers()) == 0 {
			n.connectAll(known)
		} else {
			// A site cut off keeps its own connections, so "no
			// connections" never comes back: dial the bootstrap peers
			// it lacks, and the islands merge once the link returns.
			n.connectAll(n.missing(boot))
		}
		if !bootstrapped && len(n.host.Network().Peers()) > 0 {
			if err := n.dht.Bootstrap(n.ctx); err == nil {
				bootstrapped = true
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// missing is the peers of ps this node has no connection to.
func (n *Node) missing(ps []peer.AddrInfo) []peer.AddrInfo {
	var out []peer.AddrInfo
	for _, ai := range ps {
		if n.host.Network().Connectedness(ai.ID) != network.Connected {
			out = append(out, ai)
		}
	}
	return out
}

func (n *Node) connectAll(peers []peer.AddrInfo) {
	var wg sync.WaitGroup
	for _, ai := range peers {
		if ai.ID == n.host.ID() {
			continue
		}
		wg.Add(1)
		go func(ai peer.AddrInfo) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			defer cancel()
			if err := n.host.Connect(ctx, ai); err != nil {
				log.Debugw("connect", "peer", ai.ID, "err", err)
			}
		}(ai)
	}
	wg.Wait()
}

func (n *Node) rememberedPeers() []peer.AddrInfo {
	recs, err := n.members.List("")
	if err != nil {
		log.Warnw("read membership snapshot", "err", err)
		return nil
	}
	var out []peer.AddrInfo
	for _, r := range recs {
		id, err := peer.Decode(r.Value.Peer)
		if err != nil {
			continue
		}
		ai := peer.AddrInfo{ID: id}
		for _, s := range r.Value.Addrs {
			if a, err := ma.NewMultiaddr(s); err == nil {
				ai.Addrs = append(ai.Addrs, a)
			}
		}
		out = append(out, ai)
	}
	return out
}

type mdnsNotifee struct{ n *Node }

// HandlePeerFound connects to a peer found on the LAN by mDNS.
func (m *mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == m.n.host.ID() {
		return
	}
	ctx, cancel := context.WithTimeout(m.n.ctx, 5*time.Second)
	defer cancel()
	_ = m.n.host.Connect(ctx, ai)
}
