package admission

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Host is the node's host as every protocol but the handshake sees it:
// a stream from or to a peer waits for the peer's admission, and is
// refused (reset, or an error) if it does not come.
func (a *Admission) Host() host.Host { return &guarded{Host: a.h, a: a} }

type guarded struct {
	host.Host
	a *Admission
}

func (g *guarded) SetStreamHandler(pid protocol.ID, h network.StreamHandler) {
	g.Host.SetStreamHandler(pid, g.a.guard(h))
}

func (g *guarded) SetStreamHandlerMatch(pid protocol.ID, m func(protocol.ID) bool, h network.StreamHandler) {
	g.Host.SetStreamHandlerMatch(pid, m, g.a.guard(h))
}

func (g *guarded) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	wctx, cancel := context.WithTimeout(ctx, g.a.opts.Timeout)
	ok := g.a.Wait(wctx, p)
	cancel()
	if !ok {
		g.a.opts.Refused(ReasonStream)
		return nil, fmt.Errorf("peer %s is not admitted to this network", p.ShortString())
	}
	return g.Host.NewStream(ctx, p, pids...)
}

// guard wraps a stream handler: the stream is served once its peer is
// admitted, else reset.
func (a *Admission) guard(h network.StreamHandler) network.StreamHandler {
	return func(s network.Stream) {
		p := s.Conn().RemotePeer()
		if !a.Admitted(p) {
			ctx, cancel := context.WithTimeout(context.Background(), a.opts.Timeout)
			ok := a.Wait(ctx, p)
			cancel()
			if !ok {
				a.opts.Refused(ReasonStream)
				_ = s.Reset()
				return
			}
		}
		h(s)
	}
}
