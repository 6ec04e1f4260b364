package p2phost

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	lpconnmgr "github.com/libp2p/go-libp2p/p2p/net/connmgr"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// LoadSwarmKey reads a pre-shared key in the go-ipfs v1 format
// ("/key/swarm/psk/1.0.0/", "/base16/", hex key).
func LoadSwarmKey(path string) (pnet.PSK, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("swarm key %s: %v", path, err)
	}
	psk, err := pnet.DecodeV1PSK(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("swarm key %s: %v", path, err)
	}
	return psk, nil
}

// isQUIC reports whether a listen address uses a UDP-based transport, which
// a pre-shared key cannot protect.
func isQUIC(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_UDP)
	return err == nil
}

// Options shape the host.
type Options struct {
	Key    crypto.PrivKey
	Listen []ma.Multiaddr
	// PSK, when set, makes a private network (TCP only: QUIC cannot use
	// a pre-shared key).
	PSK   pnet.PSK
	Gater connmgr.ConnectionGater
	// RelayService offers circuit relay v2 to peers behind NAT, within
	// RelayLimits, and answers their AutoNAT probes (--relay-service).
	RelayService bool
	// RelayAllowed, when set, says which peers may hold a relay slot or
	// be relayed to or from (in a network with an authority: admitted
	// members only; libp2p's relay handler is not behind the admission
	// guard that covers Agora's own protocols).
	RelayAllowed func(peer.ID) bool
	// NATTraversal makes the host learn its reachability by AutoNAT
	// (v2, and v1 from peers that serve it), reserve a slot on a relay
	// of Relays when it is not reachable, and upgrade relayed
	// connections by hole punching (--nat-traversal).
	NATTraversal bool
	Relays       []peer.AddrInfo
	// NoHolePunching leaves relayed connections relayed (a site whose
	// NAT breaks simultaneous opens, or to test the relay path).
	NoHolePunching bool
}

// RelayLimits bound what a relay-service node relays: per relayed
// connection at most RelayData bytes each way and RelayDuration, at most
// RelayMaxReservations peers holding a slot and RelayMaxCircuits relayed
// connections per peer; the resource manager's relay scope bounds the
// memory and streams under them. Large transfers are not meant to pass a
// relay: the data protocol waits for a direct connection.
const (
	RelayData            = 8 << 20
	RelayDuration        = 10 * time.Minute
	RelayMaxReservations = 128
	RelayMaxCircuits     = 16
)

// New builds the libp2p host: TCP (and QUIC unless a swarm key is set),
// Noise, yamux, the gater; relay service, AutoNAT, relay reservations and
// hole punching only as the options ask. Without NATTraversal the host
// takes itself to be reachable and probes nothing.
func New(o Options) (host.Host, error) {
	var addrs []ma.Multiaddr
	for _, a := range o.Listen {
		if o.PSK != nil && isQUIC(a) {
			log.Warnw("swarm key set: not listening on UDP/QUIC address (QUIC cannot use a pre-shared key)", "addr", a)
			continue
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no usable listen address: with --swarm-key only TCP addresses can be used")
	}
	cm, err := lpconnmgr.NewConnManager(100, 400)
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	rm, err := newResourceManager()
	if err != nil {
		return nil, fmt.Errorf("resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(o.Key),
		libp2p.ListenAddrs(addrs...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.DefaultMuxers,
		libp2p.ConnectionGater(o.Gater),
		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
		libp2p.DisableMetrics(),
	}
	if o.RelayService {
		res := relayv2.DefaultResources()
		res.Limit = &relayv2.RelayLimit{Data: RelayData, Duration: RelayDuration}
		res.MaxReservations, res.MaxCircuits = RelayMaxReservations, RelayMaxCircuits
		ropts := []relayv2.Option{relayv2.WithResources(res)}
		if o.RelayAllowed != nil {
			ropts = append(ropts, relayv2.WithACL(relayACL(o.RelayAllowed)))
		}
		opts = append(opts, libp2p.EnableRelayService(ropts...), libp2p.EnableNATService(), libp2p.EnableAutoNATv2())
	}
	switch {
	case o.NATTraversal:
		opts = append(opts, libp2p.EnableRelay(),
			libp2p.EnableAutoRelayWithStaticRelays(o.Relays, autorelay.WithBootDelay(0), autorelay.WithMinCandidates(1)))
		if !o.NoHolePunching {
			opts = append(opts, libp2p.EnableHolePunching())
		}
		if !o.RelayService { // which already turned AutoNAT v2 on
			opts = append(opts, libp2p.EnableAutoNATv2())
		}
	case o.RelayService:
		// A relay is reachable by definition; it does not probe.
		opts = append(opts, libp2p.ForceReachabilityPublic())
	default:
		opts = append(opts, libp2p.DisableRelay(), libp2p.ForceReachabilityPublic())
	}
	if o.PSK != nil {
		opts = append(opts, libp2p.PrivateNetwork(o.PSK))
	} else {
		opts = append(opts, libp2p.Transport(quic.NewTransport))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("start libp2p host on %v: %v", addrs, err)
	}
	return h, nil
}

// relayACL admits to the relay the peers allowed says.
type relayACL func(peer.ID) bool

func (f relayACL) AllowReserve(p peer.ID, _ ma.Multiaddr) bool { return f(p) }

func (f relayACL) AllowConnect(src peer.ID, _ ma.Multiaddr, dest peer.ID) bool {
	return f(src) && f(dest)
}

// ParseBootstrap turns full multiaddrs into peer infos.
func ParseBootstrap(addrs []string) ([]peer.AddrInfo, error) {
	var out []peer.AddrInfo
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("invalid --bootstrap multiaddr %q: %v", s, err)
		}
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil {
			return nil, fmt.Errorf("invalid --bootstrap multiaddr %q: must end in /p2p/<peer id>: %v", s, err)
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
