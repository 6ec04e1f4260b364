package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	logging "github.com/ipfs/go-log/v2"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/runtime"
)

// parseWeights reads "U,M,E" into market weights.
func parseWeights(s string) (market.Weights, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return market.Weights{}, fmt.Errorf("%q: want three comma-separated numbers urgency,match,efficiency", s)
	}
	var f [3]float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || v > 1000 {
			return market.Weights{}, fmt.Errorf("%q: %q is not a weight >= 0", s, p)
		}
		f[i] = v
	}
	if f[0]+f[1]+f[2] == 0 {
		return market.Weights{}, fmt.Errorf("%q: weights are all zero", s)
	}
	return market.Weights{Urgency: f[0], Match: f[1], Efficiency: f[2]}, nil
}

func init() {
	register("node", "run an Agora node", cmdNode)
}

// agoraSubsystems are our loggers; --log-level sets them, while libp2p's
// own loggers stay at warn unless GOLOG_LOG_LEVEL says otherwise.
var agoraSubsystems = []string{"node", "gossip", "market", "runtime", "store", "devices", "imageshare", "agora"}

// setLogLevel applies --log-level to Agora's loggers. GOLOG_LOG_LEVEL,
// when set, wins unless --log-level was given explicitly.
func setLogLevel(level string, explicit bool) error {
	lvl, err := logging.LevelFromString(level)
	if err != nil {
		return fmt.Errorf("invalid --log-level %q (want debug, info, warn or error)", level)
	}
	if os.Getenv("GOLOG_LOG_LEVEL") != "" && !explicit {
		return nil
	}
	if os.Getenv("GOLOG_LOG_LEVEL") == "" {
		logging.SetAllLoggers(logging.LevelWarn)
		// The DHT's routing-table refresh warns "failed to find any peer
		// in table" on every start of a lone node, and again on each
		// refresh until a peer joins: the normal state of a first node,
		// not something for the operator to act on. Its errors still show.
		_ = logging.SetLogLevel("dht/RtRefreshManager", "error")
	}
	for _, s := range agoraSubsystems {
		_ = logging.SetLogLevel(s, lvl.String())
	}
	return nil
}

// nodeConfig parses `agora node`'s flags into the node's configuration;
// ok is false when the command is done (bad usage, or --init), with its
// exit code.
func nodeConfig(args []string, stdout, stderr io.Writer) (cfg node.Config, code int, ok bool) {
	fs := newFlagSet("node", stdout, stderr)
	cfg = node.Config{PublishAPIToken: true}
	var listen, boot, labels, taskEnv multiFlag
	fs.StringVar(&cfg.DataDir, "data", node.DefaultDataDir(), "data directory (identity, database, task work dirs)")
	fs.Var(&listen, "listen", "libp2p listen multiaddr (repeatable; default /ip4/127.0.0.1/tcp/4001 and /udp/4001/quic-v1)")
	fs.StringVar(&cfg.API, "api", node.DefaultAPI, "HTTP API listen host:port (loopback by default)")
	fs.Var(&boot, "bootstrap", "full multiaddr of a peer to join through (repeatable)")
	fs.StringVar(&cfg.SwarmKeyFile, "swarm-key", "", "pre-shared swarm key file: join only the private network holding it (TCP only)")
	fs.StringVar(&cfg.Site, "site", "", "site name advertised to peers")
	fs.Var(&labels, "label", "k=v label advertised to peers (repeatable)")
	fs.StringVar(&cfg.Sandbox.TaskUser, "task-user", "auto", "who tasks run as: auto (a root node: a user ID of its own per task, else the node's user), a user name or ID (every task as that user), node (the node's own user), or map (each task as its owner's local account, by name or --task-user-map; needs root and --trust)")
	fs.StringVar(&cfg.Sandbox.UserMapFile, "task-user-map", "", "with --task-user map: a file of `CERTIFICATE_USER LOCAL_ACCOUNT` lines; users it does not name are refused (default: the account of the same name)")
	fs.StringVar(&cfg.Sandbox.IDClaimDir, "task-ids-dir", runtime.DefaultIDClaimDir, "the host-wide directory where the root nodes of this host claim blocks of task user IDs (one per node, held while it runs; docs/operations.md)")
	fs.StringVar(&cfg.Sandbox.CgroupParent, "cgroup-parent", "", "the cgroup v2 directory task cgroups are made in (default: the node's own cgroup)")
	fs.IntVar(&cfg.Sandbox.PidsMax, "task-pids", 4096, "the most processes one task may have, where the pids cgroup controller is available (0: no bound)")
	jobDataLimit := fs.String("job-data-limit", "", "the most bytes of outputs one job this node manages may keep, all its tasks together (e.g. 1TiB; default: no bound)")
	dataLimit := fs.String("data-limit", "", "the most bytes of other nodes' task outputs and uploads this node keeps (e.g. 100GiB; default: no bound but the disk)")
	imageCacheLimit := fs.String("image-cache-limit", "64GiB", "the most bytes of images this node fetched from peers or registries it keeps; the least recently used go beyond it (0: no bound; images put there by hand are never removed)")
	dataReplicas := fs.Int("data-replicas", market.DataReplicas, "how many peers keep a copy of each task's outputs and each uploaded input (0: none)")
	fs.BoolVar(&cfg.Sandbox.Namespaces, "task-namespaces", false, "start tasks in mount, PID and IPC namespaces of their own, with a private /tmp and /dev/shm (needs root)")
	fs.StringVar(&cfg.Sandbox.ContainerRuntime, "container-runtime", "auto", "the engine image tasks run through: auto (podman, else docker with a running daemon, if one works here), podman, docker, or none (no image tasks; docs/containers.md)")
	fs.BoolVar(&cfg.Sandbox.AllowUnenforcedLimits, "allow-unenforced-limits", false, "run tasks that ask for cpu or memory limits this node cannot enforce (default: refuse them)")
	fs.Var(&taskEnv, "task-env", "a variable of the node's environment that tasks also get (repeatable; otherwise they see their spec's, Agora's and a default PATH)")
	fs.StringVar(&cfg.ResourcesFile, "resources", "", "YAML file declaring or overriding resources")
	fs.BoolVar(&cfg.MDNS, "mdns", false, "discover peers on the LAN with mDNS")
	fs.BoolVar(&cfg.RelayService, "relay-service", false, "offer circuit relay v2 to peers behind NAT, bounded by the resource manager and the relay limits (docs/operations.md); for publicly reachable nodes")
	fs.BoolVar(&cfg.NoHolePunching, "no-hole-punching", false, "with --nat-traversal, keep relayed connections relayed instead of upgrading them by hole punching")
	fs.BoolVar(&cfg.NATTraversal, "nat-traversal", false, "be reachable from behind NAT: learn reachability by AutoNAT, reserve a slot on a --bootstrap peer that offers --relay-service, upgrade relayed connections by hole punching")
	fs.StringVar(&cfg.Network, "network", node.DefaultNetwork, "Agora network name (part of every topic)")
	fs.DurationVar(&cfg.AdvertInterval, "advert-interval", node.DefaultAdvertInterval, "resource advert period")
	fs.DurationVar(&cfg.AdvertRelayDelay, "advert-relay-delay", gossip.DefaultRelayDelay, "hold a peer's advert this long before relaying it, so duplicates are suppressed (0s: relay at once)")
	fs.BoolVar(&cfg.DisableNVML, "no-nvml", false, "skip NVIDIA GPU discovery")
	def := market.Defaults()
	fs.StringVar(&cfg.Market.Scorer, "scorer", def.Scorer, "bid scorer: "+strings.Join(market.DefaultScorers().Names(), ", "))
	weights := fs.String("weights", fmt.Sprintf("%g,%g,%g", def.Weights.Urgency, def.Weights.Match, def.Weights.Efficiency), "weights of the weighted scorer: urgency,match,efficiency")
	fs.IntVar(&cfg.Market.D, "d", def.D, "CFP fan-out: candidates invited per auction round (power of d choices)")
	fs.DurationVar(&cfg.Market.BidWindow, "bid-window", def.BidWindow, "how long a manager waits for bids")
	fs.DurationVar(&cfg.Market.SchedulingTimeout, "scheduling-timeout", def.SchedulingTimeout, "how long a task may find no node that could hold it before its job fails, for specs without pending_timeout; 0 waits for one")
	fs.DurationVar(&cfg.Market.JobRetention, "job-retention", def.JobRetention, "how long finished jobs, their replicas, events and task logs are kept (0s: forever)")
	fs.DurationVar(&cfg.AccountingRetention, "accounting-retention", node.DefaultAccountingRetention, "how long accounting records of task attempts are kept, whatever --job-retention (0s: forever)")
	fs.StringVar(&cfg.Trust, "trust", "", "the cluster authority's public key (authority.pub, or its text): admit only peers it certified")
	fs.StringVar(&cfg.CertFile, "cert", "", "this node's certificate (from agora admit); required with --trust")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow what reaches beyond loopback: without --trust, libp2p listen addresses (any peer that reaches the node may run commands on it); an --api address (anyone who reaches it drives the node)")
	initOnly := fs.Bool("init", false, "create the node's identity in --data, print its peer ID (for agora admit) and exit")
	logLevel := fs.String("log-level", "info", "log level of Agora's own loggers (debug, info, warn, error); GOLOG_LOG_LEVEL also works")
	configFile := fs.String("config", "", "YAML file with a key for any of these flags, named without the dashes (e.g. /etc/agora/agora.yaml; docs/operations.md); a flag given here overrides its key")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return cfg, flagExit(err), false
	}
	if *configFile != "" {
		if err := applyConfigFile(fs, *configFile); err != nil {
			fmt.Fprintf(stderr, "agora node: %v\n", err)
			return cfg, exitBadUsage, false
		}
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora node: unexpected argument %q\n", pos[0])
		return cfg, exitBadUsage, false
	}
	for _, l := range []struct {
		flag, v string
		to      *int64
	}{{"--data-limit", *dataLimit, &cfg.DataLimit}, {"--job-data-limit", *jobDataLimit, &cfg.Market.JobDataLimit}} {
		if l.v == "" {
			continue
		}
		n, err := resource.ParseSize(l.v)
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "agora node: %s %q: want a size such as 100GiB\n", l.flag, l.v)
			return cfg, exitBadUsage, false
		}
		*l.to = n
	}
	if n, err := resource.ParseSize(*imageCacheLimit); err != nil || n < 0 {
		fmt.Fprintf(stderr, "agora node: --image-cache-limit %q: want a size such as 64GiB, or 0 for no bound\n", *imageCacheLimit)
		return cfg, exitBadUsage, false
	} else {
		cfg.ImageCacheLimit = n
	}
	switch {
	case *dataReplicas < 0 || *dataReplicas > market.MaxDataHolders-1:
		fmt.Fprintf(stderr, "agora node: --data-replicas %d: out of range 0..%d\n", *dataReplicas, market.MaxDataHolders-1)
		return cfg, exitBadUsage, false
	case *dataReplicas == 0:
		cfg.Market.DataReplicas = -1 // none
	default:
		cfg.Market.DataReplicas = *dataReplicas
	}
	if *initOnly {
		id, err := node.InitIdentity(cfg.DataDir)
		if err != nil {
			fmt.Fprintf(stderr, "agora node: %v\n", err)
			return cfg, exitBadUsage, false
		}
		fmt.Fprintln(stdout, id)
		return cfg, exitOK, false
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "log-level" })
	if err := setLogLevel(*logLevel, explicit); err != nil {
		fmt.Fprintf(stderr, "agora node: %v\n", err)
		return cfg, exitBadUsage, false
	}
	cfg.Listen, cfg.Bootstrap, cfg.Sandbox.PassEnv = listen, boot, taskEnv
	if len(labels) > 0 {
		cfg.Labels = map[string]string{}
		for _, l := range labels {
			k, v, err := node.ParseLabel(l)
			if err != nil {
				fmt.Fprintf(stderr, "agora node: --label: %v\n", err)
				return cfg, exitBadUsage, false
			}
			cfg.Labels[k] = v
		}
	}
	w, err := parseWeights(*weights)
	if err != nil {
		fmt.Fprintf(stderr, "agora node: --weights: %v\n", err)
		return cfg, exitBadUsage, false
	}
	cfg.Market.Weights = w
	if cfg.Market.D < 1 || cfg.Market.D > 64 {
		fmt.Fprintf(stderr, "agora node: --d %d out of range 1..64\n", cfg.Market.D)
		return cfg, exitBadUsage, false
	}
	if _, ok := market.DefaultScorers()[cfg.Market.Scorer]; !ok {
		fmt.Fprintf(stderr, "agora node: --scorer %q unknown (have %s)\n", cfg.Market.Scorer, strings.Join(market.DefaultScorers().Names(), ", "))
		return cfg, exitBadUsage, false
	}
	if cfg.AdvertInterval < 50*time.Millisecond {
		fmt.Fprintf(stderr, "agora node: --advert-interval %v is below the 50ms minimum\n", cfg.AdvertInterval)
		return cfg, exitBadUsage, false
	}
	switch {
	case cfg.AdvertRelayDelay < 0 || cfg.AdvertRelayDelay > cfg.AdvertInterval/10:
		fmt.Fprintf(stderr, "agora node: --advert-relay-delay %v out of range 0..%v (a tenth of --advert-interval)\n", cfg.AdvertRelayDelay, cfg.AdvertInterval/10)
		return cfg, exitBadUsage, false
	case cfg.AdvertRelayDelay == 0:
		cfg.AdvertRelayDelay = -1 // relay at once
	}
	switch {
	case cfg.Market.JobRetention < 0:
		fmt.Fprintf(stderr, "agora node: --job-retention %v is negative (0s keeps finished jobs forever)\n", cfg.Market.JobRetention)
		return cfg, exitBadUsage, false
	case cfg.Market.JobRetention == 0:
		cfg.Market.JobRetention = -1 // forever
	}
	switch {
	case cfg.AccountingRetention < 0:
		fmt.Fprintf(stderr, "agora node: --accounting-retention %v is negative (0s keeps accounting records forever)\n", cfg.AccountingRetention)
		return cfg, exitBadUsage, false
	case cfg.AccountingRetention == 0:
		cfg.AccountingRetention = -1 // forever
	}
	return cfg, exitOK, true
}

func cmdNode(args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := nodeConfig(args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "agora node: %v\n", err)
		if node.IsConfigError(err) {
			return exitBadUsage
		}
		return exitFailed
	}
	fmt.Fprintf(stdout, "agora node %s\n  api  %s\n", n.ID(), n.APIAddr())
	for _, a := range n.Addrs() {
		fmt.Fprintf(stdout, "  addr %s\n", a)
	}
	<-ctx.Done()
	stop()
	fmt.Fprintln(stdout, "agora node: shutting down (interrupt again to kill the tasks at once)")
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			fmt.Fprintf(stderr, "agora node: shutdown: %v\n", err)
			return exitFailed
		}
		return exitOK
	case <-again:
		fmt.Fprintln(stdout, "agora node: killing the tasks")
		n.Kill()
		return exitFailed
	}
}
