package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/agora-sched/agora/devices"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/executor"
)

// TaskRunner runs the tasks awarded to a node; runtime.Runner is the
// real one, tests pass fakes.
type TaskRunner = executor.TaskRunner

// Defaults for a node started with no flags: everything on loopback.
const (
	DefaultAPI            = "127.0.0.1:7700"
	DefaultNetwork        = "agora"
	DefaultAdvertInterval = 2 * time.Second
)

// DefaultListen are the listen addresses used when none are configured.
var DefaultListen = []string{"/ip4/127.0.0.1/tcp/4001", "/ip4/127.0.0.1/udp/4001/quic-v1"}

// DefaultDataDir is where a node keeps its state when --data is not given:
// $XDG_DATA_HOME/agora, else ~/.local/share/agora, else ./agora-data.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "agora")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "agora")
	}
	return "agora-data"
}

// Config is everything a node needs to start. Zero values take defaults
// (see withDefaults); New validates the rest.
type Config struct {
	DataDir        string            // node state: identity, database, task work dirs
	Listen         []string          // libp2p listen multiaddrs
	API            string            // HTTP API host:port ("" = DefaultAPI; port 0 picks one)
	Bootstrap      []string          // full multiaddrs (ending /p2p/ID) of peers to join through
	SwarmKeyFile   string            // optional pre-shared key file for a private network
	Site           string            // site name advertised to peers
	Labels         map[string]string // k=v labels advertised to peers
	ResourcesFile  string            // optional YAML declaring or overriding resources
	Resources      *devices.Overrides
	MDNS           bool          // enable mDNS discovery on the LAN (off by default)
	RelayService   bool          // offer circuit relay v2 to peers behind NAT (--relay-service)
	NATTraversal   bool          // AutoNAT, the bootstrap peers as relays, hole punching (--nat-traversal)
	NoHolePunching bool          // with NATTraversal, stay on relayed connections (--no-hole-punching)
	Network        string        // Agora network name, part of every topic
	AdvertInterval time.Duration // resource advert period
	// AdvertRelayDelay is how long a peer's advert is held before it is
	// relayed, so that neighbours' IDONTWANTs suppress duplicate copies
	// (gossip.DefaultRelayDelay when zero, none when negative).
	AdvertRelayDelay time.Duration
	DisableNVML      bool // skip GPU discovery (tests)
	// Trust is the cluster authority's public key (its text, or a file
	// holding it): the node then admits only peers with a valid
	// certificate of it, and needs its own (CertFile). Empty: an open
	// node, which may listen on loopback only unless Insecure is set.
	// Insecure also lets the HTTP API listen beyond loopback.
	Trust           string
	CertFile        string
	Insecure        bool
	Sandbox         executor.Sandbox // who tasks run as, what they see (--task-user, --task-env); not with Runner
	DataLimit       int64            // bytes of others' outputs and uploads kept at most (--data-limit); 0: no bound
	ImageCacheLimit int64            // bytes of images fetched from peers and registries kept at most (--image-cache-limit); 0: no bound
	PublishAPIToken bool             // copy the API token where this user's agora command finds it (api.TokenPath)
	// AccountingRetention is how long accounting records are kept
	// (--accounting-retention; DefaultAccountingRetention when zero,
	// forever when negative), whatever the job retention.
	AccountingRetention time.Duration
	// SendDelay, when set, delays every market message to a peer by the
	// returned one-way latency (fault injection for tests).
	SendDelay func(to string) time.Duration
	// Market tunes the scheduler (scorer, weights, d, windows); Self,
	// Site, Labels and Capacity are filled in by the node.
	Market market.Config
	// OnRoundClosed, when set, is called for every single-task auction
	// round this node manages that closes with bids: when its CFPs went
	// out and when its award was decided (tracing, benchmarks). It runs
	// on the node's event loop, so it must return quickly and must not
	// call back into the node.
	OnRoundClosed func(market.RoundClosed)
	// Runner, when set, runs the node's awarded tasks instead of the
	// process runtime (runtime.Runner): another executor, or a benchmark's
	// stand-in that keeps task execution off this machine.
	Runner TaskRunner
	// PubSubOptions are extra GossipSub options (tests and tracing, e.g.
	// pubsub.WithRawTracer); nil for the defaults.
	PubSubOptions []pubsub.Option
}

// ConfigError is a problem with the node's configuration or environment
// found before the node started: a bad flag, a malformed file, an address in
// use, a data dir held by another node. The CLI exits 2 for it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// dataDirInUse is the error of a data dir whose store lock another node
// holds; it wraps store.ErrLocked.
type dataDirInUse struct {
	dir string
	err error
}

func (e *dataDirInUse) Error() string {
	return fmt.Sprintf("data dir %s is in use by another running agora node", e.dir)
}
func (e *dataDirInUse) Unwrap() error { return e.err }

// IsConfigError reports whether err is (or wraps) a ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir()
	}
	if len(c.Listen) == 0 {
		c.Listen = DefaultListen
	}
	if c.API == "" {
		c.API = DefaultAPI
	}
	if c.Network == "" {
		c.Network = DefaultNetwork
	}
	if c.AdvertInterval <= 0 {
		c.AdvertInterval = DefaultAdvertInterval
	}
	return c
}

// parseListen validates listen addresses.
func parseListen(addrs []string) ([]ma.Multiaddr, error) {
	var out []ma.Multiaddr
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, configErr("invalid --listen multiaddr %q: %v", s, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// ParseLabel parses one k=v label.
func ParseLabel(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("invalid label %q: want key=value", s)
	}
	return k, v, nil
}
