package node

import (
	"bytes"
	"fmt"
	"os"

	"github.com/agora-sched/agora/node/admission"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// loadSwarmKey reads a pre-shared key in the go-ipfs v1 format
// ("/key/swarm/psk/1.0.0/", "/base16/", hex key).
func loadSwarmKey(path string) (pnet.PSK, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, configErr("swarm key %s: %v", path, err)
	}
	psk, err := pnet.DecodeV1PSK(bytes.NewReader(b))
	if err != nil {
		return nil, configErr("swarm key %s: %v", path, err)
	}
	return psk, nil
}

// isQUIC reports whether a listen address uses a UDP-based transport, which
// a pre-shared key cannot protect.
func isQUIC(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_UDP)
	return err == nil
}

// newHost builds the libp2p host: TCP (and QUIC unless a swarm key is set),
// Noise, yamux, our gater, and none of relay, hole punching, port mapping or
// AutoNAT probing.
func newHost(key crypto.PrivKey, listen []ma.Multiaddr, psk pnet.PSK, gater *admission.Gater) (host.Host, error) {
	var addrs []ma.Multiaddr
	for _, a := range listen {
		if psk != nil && isQUIC(a) {
			log.Warnw("swarm key set: not listening on UDP/QUIC address (QUIC cannot use a pre-shared key)", "addr", a)
			continue
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, configErr("no usable listen address: with --swarm-key only TCP addresses can be used")
	}
	cm, err := connmgr.NewConnManager(100, 400)
	if err != nil {
		return nil, fmt.Errorf("node: connection manager: %w", err)
	}
	rm, err := newResourceManager()
	if err != nil {
		return nil, fmt.Errorf("node: resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ListenAddrs(addrs...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.DefaultMuxers,
		libp2p.DisableRelay(),
		libp2p.ForceReachabilityPublic(), // no AutoNAT probing; DHT runs in server mode anyway
		libp2p.ConnectionGater(gater),
		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
		libp2p.DisableMetrics(),
	}
	if psk != nil {
		opts = append(opts, libp2p.PrivateNetwork(psk))
	} else {
		opts = append(opts, libp2p.Transport(quic.NewTransport))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, configErr("start libp2p host on %v: %v", addrs, err)
	}
	return h, nil
}

// parseBootstrap turns full multiaddrs into peer infos.
func parseBootstrap(addrs []string) ([]peer.AddrInfo, error) {
	var out []peer.AddrInfo
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, configErr("invalid --bootstrap multiaddr %q: %v", s, err)
		}
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil {
			return nil, configErr("invalid --bootstrap multiaddr %q: must end in /p2p/<peer id>: %v", s, err)
		}
		out = append(out, *ai)
	}
	return out, nil
}

// newResourceManager is libp2p's default resource manager (its default
// limits, scaled to the machine, with its services' limits) without the
// statistics reporter the library attaches to it even when its metrics
// are disabled: the reporter formats a timestamp and updates Prometheus
// gauges of the default registry, which this node does not serve, on every
// stream and memory reservation (about 5 % of a node's CPU in
// BenchmarkNetAuctionRound's profile).
func newResourceManager() (network.ResourceManager, error) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits.AutoScale()), rcmgr.WithMetricsDisabled())
}
