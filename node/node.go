package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agora-sched/agora/devices"
	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node/accounting"
	"github.com/agora-sched/agora/node/admission"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/node/checkpoints"
	"github.com/agora-sched/agora/node/commit"
	"github.com/agora-sched/agora/node/data"
	"github.com/agora-sched/agora/node/executor"
	"github.com/agora-sched/agora/node/imageshare"
	"github.com/agora-sched/agora/node/p2phost"
	"github.com/agora-sched/agora/node/query"
	"github.com/agora-sched/agora/node/replication"
	"github.com/agora-sched/agora/node/transport"
	"github.com/agora-sched/agora/node/web"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/store"
)

var log = logging.Logger("node")

// DHTPrefix is the protocol prefix of Agora's private Kademlia DHT.
const DHTPrefix = "/agora"

// apiAddrFile holds the API's actual host:port inside the data dir, so
// that tools and tests can find a node started with --api 127.0.0.1:0.
const apiAddrFile = "api.addr"

// Node is one running Agora node.
type Node struct {
	cfg         Config
	closers     []func(graceful bool)  // what New built, to let go of last first (onClose)
	boot        uint64                 // this start's boot counter (nextBoot)
	ledger      *store.Ledger          // the IDs of the jobs stored (ledger.go)
	ledgerFresh bool                   // the ledger file was made at this start
	units       []executor.DeviceUnits // the declared devices' units and their paths
	images      *imageSet              // the images the engine holds (images.go)
	users       *executor.UserMap      // --task-user map: owners to local accounts; nil otherwise
	history     web.History            // the dashboard's charts' day of samples (history.go)
	imgs        *imageshare.Service    // sends and fetches images; nil without an engine
	imgCache    *imageshare.Cache      // the images it fetched, for --image-cache-limit
	walCopies   []string               // the write-ahead logs as they were at start (ledger.go)
	store       *store.Store
	host        host.Host
	ph          host.Host                           // what every protocol but admission runs on
	trust       *trust                              // nil without --trust
	relayAdm    atomic.Pointer[admission.Admission] // for the relay's ACL, read off the loop
	dht         *dht.IpfsDHT
	ps          *pubsub.PubSub
	leaveWatch  *gossip.LeaveWatch // Leave waits on it (gossip.LeaveWatch)
	gossip      *gossip.Service
	gater       *admission.Gater
	reg         *prometheus.Registry
	met         *marketMetrics
	info        devices.Info
	capacity    resource.Vector
	members     *store.Bucket[memberRecord]
	mdns        interface{ Close() error }

	api    *api.Server
	apiLn  net.Listener
	checks *ticketChecks // a ticket's byte-only checks, run ahead of the loop; with --trust

	// market plane
	mkt            *market.Market
	netIn          chan func() // network input: dropped when full (loop.go)
	calls          chan func() // exits, acks, API calls: wait for room (loop.go)
	tr             *transport.Transport
	query          *query.Service
	acct           *accounting.Store   // accounting records signed or accepted here
	acctSvc        *accounting.Service // pushes and takes them
	jobs           *store.Bucket[market.JobRecord]
	copies         *store.Bucket[replication.Copy] // job-record copies held for other managers
	repl           *replication.Service
	copied         copyWaiters                     // submits waiting for their job's first copies
	historyDirty   bool                            // loop goroutine only
	recBuf         []store.Entry[market.JobRecord] // apply's scratch; loop goroutine only
	evBuf          []store.LogAppend               // apply's scratch; loop goroutine only
	evCh           chan eventBatch                 // to the event writer; set and used by the loop goroutine only
	afterTurn      []func()                        // run after the current turn's effects; loop goroutine only
	commitCh       chan commit.Batch               // to the committer; set and used by the loop goroutine only
	storeErr       atomic.Pointer[error]           // the store's refusal of the committer's last commit (storeFailing)
	commitsPending atomic.Int64                    // turns handed to the committer and not yet carried out
	cpuDeclared    bool                            // CPU capacity comes from --resources, not the machine
	ex             *executor.Executor              // runs the tasks the market starts
	data           *data.Service                   // keeps and moves tasks' outputs and inputs

	// soft is the market's soft state the loop published last, with the
	// predicted wait, for the adverts and metrics (read off the loop);
	// load is the sampled CPU load (math.Float64bits).
	soft atomic.Pointer[softState]
	load atomic.Uint64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed chan struct{}
	once   sync.Once
}

// memberRecord is the persisted membership snapshot of one peer: enough
// to dial it again after a restart.
type memberRecord struct {
	Peer     string    `json:"peer"`
	Addrs    []string  `json:"addrs"`
	Site     string    `json:"site"`
	LastSeen time.Time `json:"last_seen"`
}

// New validates cfg, starts a node and returns it running; it runs until
// Close or Kill, whatever becomes of ctx. Errors caused by configuration
// or environment (bad flags or files, addresses in use, a locked data
// dir) are *ConfigError.
//
// The node is built in steps, in order; each step that holds something
// registers how to let it go (onClose), and Close, Kill or a failed step
// lets go of all of it in the reverse order.
func New(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg = cfg.withDefaults()
	in, err := readConfig(&cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, gater: &admission.Gater{}, reg: prometheus.NewRegistry(), closed: make(chan struct{}), netIn: make(chan func(), loopQueue), calls: make(chan func(), callQueue), images: newImageSet(), users: in.users}
	n.met = newMarketMetrics(n.reg, n)
	// The node lives until Close, not until ctx ends: a caller that cancels
	// ctx on SIGTERM must still get a graceful leave from Close.
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			n.teardown(false)
		}
	}()
	for _, step := range []func(*configRead) error{
		n.openStore,
		func(*configRead) error { return n.loadTrust() },
		n.listenAPI,
		n.discover,
		n.startHost,
		func(*configRead) error { return n.startAdmission() },
		n.startDHT,
		n.startPubSub,
		func(*configRead) error { return n.joinRevocations() },
		n.startGossip,
		func(in *configRead) error { return n.startMarket(len(in.boot) == 0) },
		n.startMDNS,
		n.run,
		func(*configRead) error { return n.startAPI() },
	} {
		if err := step(in); err != nil {
			return nil, err
		}
	}
	log.Infow("node started", "peer", n.host.ID(), "addrs", n.host.Addrs(), "api", n.APIAddr(), "resources", n.capacity.String())
	return n, nil
}

// configRead is what New reads from its Config before it builds
// anything.
type configRead struct {
	users     *executor.UserMap // --task-user map; nil otherwise
	listen    []ma.Multiaddr
	boot      []peer.AddrInfo
	overrides *devices.Overrides
	psk       []byte
	runner    io.Closer // the task runner New made, which holds its claim on task IDs
}

// readConfig checks cfg and reads the files it names; it fills in the
// data dir's absolute path and the task runner.
func readConfig(cfg *Config) (*configRead, error) {
	in := &configRead{}
	var err error
	if in.listen, err = parseListen(cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.Trust == "" && !cfg.Insecure {
		if err := admission.CheckExposure(in.listen); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	if err := api.CheckExposure(cfg.API, cfg.Insecure); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if in.boot, err = p2phost.ParseBootstrap(cfg.Bootstrap); err != nil {
		return nil, &ConfigError{Err: err}
	}
	in.overrides = cfg.Resources
	if cfg.ResourcesFile != "" {
		ov, err := devices.LoadFile(cfg.ResourcesFile)
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		in.overrides = &ov
	}
	if cfg.SwarmKeyFile != "" {
		if in.psk, err = p2phost.LoadSwarmKey(cfg.SwarmKeyFile); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	// Tasks run in their own working directories: paths under a relative
	// --data would resolve against those.
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, configErr("data dir: %v", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, configErr("data dir %s: %v", cfg.DataDir, err)
	}
	switch {
	case cfg.Sandbox.TaskUser == "map" && cfg.Trust == "":
		return nil, configErr("--task-user map needs --trust: a task's owner is the user its certificate names")
	case cfg.Sandbox.TaskUser == "map":
		if in.users, err = executor.NewUserMap(cfg.Sandbox.UserMapFile); err != nil {
			return nil, &ConfigError{Err: err}
		}
	case cfg.Sandbox.UserMapFile != "":
		return nil, configErr("--task-user-map is for --task-user map")
	}
	given := cfg.Runner
	if cfg.Runner, err = executor.RunnerFor(cfg.Runner, cfg.Sandbox, cfg.DataDir); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if c, ok := cfg.Runner.(io.Closer); ok && given == nil {
		in.runner = c
	}
	for k := range cfg.Labels {
		if strings.HasPrefix(k, "agora.") {
			return nil, configErr("label %s: labels starting agora. are the node's own", k)
		}
	}
	if e := executor.EngineOf(cfg.Runner); e != nil {
		// What image tasks require (spec.ContainerLabel), and which engine.
		cfg.Labels = maps.Clone(cfg.Labels)
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[spec.ContainerLabel] = "yes"
		cfg.Labels[spec.ContainerLabel+".engine"] = e.Name
	}
	return in, nil
}

// onClose registers how to let go of what a step of New built; teardown
// runs them last first. graceful: Close, not Kill or a failed start.
func (n *Node) onClose(f func(graceful bool)) { n.closers = append(n.closers, f) }

// openStore opens the store (after keeping copies of its write-ahead
// logs, for a damaged store's report), the ledger of the keys it must
// hold, and the node's buckets; it reads the boot counter.
func (n *Node) openStore(in *configRead) (err error) {
	if in.runner != nil {
		n.onClose(func(bool) { _ = in.runner.Close() })
	}
	dir := n.cfg.DataDir
	if n.walCopies, err = preserveWAL(dir); err != nil {
		return configErr("data dir %s: copy the write-ahead logs before opening them: %v", dir, err)
	}
	if n.store, err = store.Open(filepath.Join(dir, "db")); err != nil {
		if errors.Is(err, store.ErrLocked) {
			dropWALCopies(dir) // another node's live logs
			return &ConfigError{Err: &dataDirInUse{dir: dir, err: err}}
		}
		if looksDamaged(err) {
			return n.damaged(err)
		}
		return configErr("open store in %s: %v", dir, err)
	}
	n.onClose(func(graceful bool) {
		if graceful {
			_ = os.Remove(filepath.Join(dir, apiAddrFile))
		}
		_ = n.store.Close()
	})
	if n.ledger, n.ledgerFresh, err = store.OpenLedger(filepath.Join(dir, ledgerFile), false); err != nil {
		return n.damaged(err)
	}
	n.onClose(func(bool) { _ = n.ledger.Close() })
	n.members = store.NewBucket[memberRecord](n.store, "members")
	// A job record grows with the job's replicas and their attempts: 740
	// KB for 1,000 finished replicas, over a plain bucket's value limit.
	// Both are rewritten whole at every change (docs/architecture.md,
	// "Job records"), so they are stored in a binary encoding, a third of
	// JSON's size; JSON ones from earlier versions still read.
	n.jobs = store.NewBucket[market.JobRecord](n.store, "jobs").AllowLarge(replication.MaxFrame).
		WithCodec(wire.EncodeJobRecord, wire.DecodeJobRecord)
	n.copies = store.NewBucket[replication.Copy](n.store, "replicas").AllowLarge(replication.MaxFrame+4<<10).
		WithCodec(replication.EncodeCopy, replication.DecodeCopy)
	n.boot, err = n.nextBoot()
	return err
}

// listenAPI takes the API's address early, so that a taken port fails the
// start before anything joins the network.
func (n *Node) listenAPI(*configRead) (err error) {
	if n.apiLn, err = net.Listen("tcp", n.cfg.API); err != nil {
		return configErr("API address %s: %v", n.cfg.API, err)
	}
	n.onClose(func(bool) {
		if n.api == nil {
			_ = n.apiLn.Close()
		}
	})
	return nil
}

// discover finds the node's resources and applies the declared ones.
func (n *Node) discover(in *configRead) error {
	info, err := devices.Discover(devices.DiscoverOptions{DiskPath: n.cfg.DataDir, DisableNVML: n.cfg.DisableNVML})
	if err != nil {
		return fmt.Errorf("node: discover resources: %w", err)
	}
	n.info = info
	n.capacity = info.Capacity
	if in.overrides != nil {
		n.capacity = in.overrides.Apply(n.capacity)
		// A declared CPU count describes another machine than the one
		// the sampler measures; its load would mislead the predictor.
		n.cpuDeclared = in.overrides.CPU != nil
	}
	for i, d := range n.capacity.Devices {
		u := executor.DeviceUnits{Kind: d.Kind, Model: d.Model, Count: d.Count}
		if in.overrides != nil && in.overrides.DevicesSet && i < len(in.overrides.DevicePaths) {
			u.Paths = in.overrides.DevicePaths[i]
		}
		for _, p := range u.Paths {
			// A path that is not there would fail every task given the
			// unit, long after the node said it had it.
			if fi, err := os.Stat(p); err != nil {
				return configErr("resources file: devices[%d].paths: %v", i, err)
			} else if fi.Mode()&os.ModeDevice == 0 {
				return configErr("resources file: devices[%d].paths: %s is not a device file", i, p)
			}
		}
		n.units = append(n.units, u)
	}
	n.checkContainerGPUs(info, in)
	n.soft.Store(&softState{SoftState: market.SoftState{Free: n.capacity.Clone()}})
	return nil
}

// checkContainerGPUs prepares the GPUs NVML found for image tasks: as
// CDI devices where the host's CDI specs name them all, else as device
// files, which a start-up check must find. When that check fails, the
// node says so in its label spec.ContainerGPULabel and is never given an
// image task that asks for GPUs (it still runs process tasks on them,
// and image tasks without). Declared GPUs are the operator's word and
// are passed as device files where the host has them, unchecked.
func (n *Node) checkContainerGPUs(info devices.Info, in *configRead) {
	e := executor.EngineOf(n.cfg.Runner)
	if e == nil || len(info.Capacity.GPUs) == 0 || (in.overrides != nil && in.overrides.GPUsSet) {
		return
	}
	names, err := runtime.FindCDIDevices(runtime.CDIDirs, runtime.NvidiaCDIKind)
	if err != nil {
		log.Warnw("CDI specs", "err", err)
	}
	if cdi := cdiNames(info.Capacity.GPUs, names); cdi != nil {
		e.CDIGPUs = cdi
		log.Infow("GPUs pass into containers through CDI", "kind", runtime.NvidiaCDIKind, "devices", len(cdi))
		return
	}
	idx := make([]int, len(info.Capacity.GPUs))
	for i, g := range info.Capacity.GPUs {
		idx[i] = g.Index
	}
	if err := runtime.CheckGPUDevices("/dev", idx); err != nil {
		log.Warnw("image tasks that ask for GPUs will not run here", "err", err)
		n.cfg.Labels = maps.Clone(n.cfg.Labels)
		n.cfg.Labels[spec.ContainerGPULabel] = "no"
	}
}

// cdiNames maps each GPU's index to its CDI device name (its UUID, else
// its index), or nil unless every GPU has one.
func cdiNames(gpus []resource.GPU, names map[string]bool) map[int]string {
	out := make(map[int]string, len(gpus))
	for _, g := range gpus {
		switch {
		case g.UUID != "" && names[g.UUID]:
			out[g.Index] = g.UUID
		case names[strconv.Itoa(g.Index)]:
			out[g.Index] = strconv.Itoa(g.Index)
		default:
			return nil
		}
	}
	return out
}

// startHost starts the libp2p host with the node's identity.
func (n *Node) startHost(in *configRead) error {
	key, err := admission.LoadIdentity(n.cfg.DataDir)
	if err != nil {
		return &ConfigError{Err: err}
	}
	cfg := n.cfg
	n.host, err = p2phost.New(p2phost.Options{Key: key, Listen: in.listen, PSK: in.psk, Gater: n.gater,
		RelayService: cfg.RelayService, RelayAllowed: n.relayAllowed, NATTraversal: cfg.NATTraversal, Relays: in.boot,
		NoHolePunching: cfg.NoHolePunching})
	if err != nil {
		return &ConfigError{Err: err}
	}
	n.onClose(func(bool) {
		_ = n.host.Close()
		_ = n.host.Network().ResourceManager().Close() // the host leaves it open
	})
	n.onClose(func(bool) { n.closeTrust() })
	if err := n.store.PutMeta("peer_id", n.host.ID().String()); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// startDHT starts the DHT in server mode under Agora's prefix, with the
// bootstrap peers only.
func (n *Node) startDHT(in *configRead) (err error) {
	n.dht, err = dht.New(n.ph,
		dht.Mode(dht.ModeServer),
		dht.ProtocolPrefix(DHTPrefix),
		dht.BootstrapPeers(in.boot...))
	if err != nil {
		return fmt.Errorf("node: start DHT: %w", err)
	}
	n.onClose(func(bool) { _ = n.dht.Close() })
	return nil
}

// startPubSub starts gossipsub with Agora's router parameters first, so
// that cfg.PubSubOptions may override them.
func (n *Node) startPubSub(*configRead) (err error) {
	score, thresholds := gossip.PeerScore(n.cfg.Network, n.appScore())
	n.leaveWatch = gossip.NewLeaveWatch()
	psOpts := append([]pubsub.Option{pubsub.WithGossipSubParams(gossip.GossipSubParams()),
		pubsub.WithPeerScore(score, thresholds), gossip.CutOff(n.cutOff), n.leaveWatch.Option()}, n.cfg.PubSubOptions...)
	if n.ps, err = pubsub.NewGossipSub(n.ctx, n.ph, psOpts...); err != nil {
		return fmt.Errorf("node: start gossipsub: %w", err)
	}
	return nil
}

// startGossip joins the advert topic: before the market, whose transport
// tells it of peers heard from.
func (n *Node) startGossip(*configRead) (err error) {
	cfg := n.cfg
	gcfg := gossip.Config{
		Network:    cfg.Network,
		Interval:   cfg.AdvertInterval,
		RelayDelay: cfg.AdvertRelayDelay,
		Boot:       n.boot,
		Local:      n.localAdvert,
		OnChange:   n.onAdvert,
		OnGone:     n.onGone,
		Metrics:    gossip.NewMetrics(n.reg),
		Flooded:    n.cutOff,
		LeaveWatch: n.leaveWatch,
	}
	if n.trust != nil {
		gcfg.Cert, gcfg.Admit = n.trust.chain.Encode(), n.trust.adm.AdmitAdvert
	}
	if n.gossip, err = gossip.New(n.ph, n.ps, gcfg); err != nil {
		return err
	}
	n.onClose(func(bool) { _ = n.gossip.Close() })
	return nil
}

// startMDNS starts LAN discovery, when asked for.
func (n *Node) startMDNS(*configRead) error {
	if !n.cfg.MDNS {
		return nil
	}
	svc := mdns.NewMdnsService(n.host, "agora-"+n.cfg.Network, &mdnsNotifee{n: n})
	if err := svc.Start(); err != nil {
		return fmt.Errorf("node: start mDNS: %w", err)
	}
	n.mdns = svc
	n.onClose(func(bool) { _ = svc.Close() })
	return nil
}

// run starts the node's goroutines: the event loop, the join loop, the
// usage sampler, retention, the advert loops and, with NAT traversal,
// hole punching. Letting go of them: stop them all and wait.
func (n *Node) run(in *configRead) error {
	n.onClose(func(bool) {
		n.cancel()
		n.wg.Wait()
	})
	n.gossip.Start(n.ctx)
	n.wg.Add(4)
	go n.loop()
	go n.joinLoop(in.boot)
	go n.sampleLoop()
	go n.retentionLoop(n.mkt.Config().JobRetention)
	n.wg.Go(n.imageLoop)
	n.wg.Go(n.accountingLoop)
	n.wg.Go(n.historyLoop)
	if n.cfg.NATTraversal && !n.cfg.NoHolePunching {
		n.wg.Go(func() { p2phost.KeepPunching(n.ctx, n.host, 5*time.Second, p2phost.PunchAfter, nil) })
	}
	return nil
}

// nextBoot increments and returns the persisted boot counter, which orders
// this node's adverts across restarts.
func (n *Node) nextBoot() (uint64, error) {
	v, _, err := n.store.GetMeta("boot")
	if err != nil {
		return 0, fmt.Errorf("node: read boot counter: %w", err)
	}
	b, _ := strconv.ParseUint(v, 10, 64)
	b++
	if err := n.store.PutMeta("boot", strconv.FormatUint(b, 10)); err != nil {
		return 0, fmt.Errorf("node: write boot counter: %w", err)
	}
	return b, nil
}

// sampleLoop measures live usage for the adverts.
func (n *Node) sampleLoop() {
	defer n.wg.Done()
	s := devices.NewSampler(devices.SamplerOptions{})
	t := time.NewTicker(n.cfg.AdvertInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.sweepTrust()
			u, err := s.Sample()
			if err != nil {
				log.Debugw("usage sample", "err", err)
				continue
			}
			load := min(max(u.CPUBusy, 0), 1)
			n.load.Store(math.Float64bits(load))
			if !n.cpuDeclared {
				n.input(func() { n.mkt.ObserveLoad(time.Now(), load) })
			}
		}
	}
}

// onAdvert keeps the peerstore, the membership snapshot and the market's
// view current.
func (n *Node) onAdvert(ch gossip.Change, a gossip.Advert) {
	if ch == gossip.Left {
		_ = n.members.Delete(a.Peer.String())
		n.onGone(a.Peer)
		return
	}
	if ch == gossip.Rebooted {
		// Its new boot counter tells the market: what it ran died with it.
		log.Infow("peer restarted", "peer", a.Peer)
		n.repl.Forget(a.Peer)
	}
	p := peerFromAdvert(a)
	n.input(func() { n.mkt.Advert(time.Now(), p) })
	n.host.Peerstore().AddAddrs(a.Peer, a.Addrs, peerstore.RecentlyConnectedAddrTTL)
	if ch == gossip.Joined {
		log.Infow("peer joined", "peer", a.Peer, "site", a.Site, "resources", a.Capacity.String())
		rec := memberRecord{Peer: a.Peer.String(), Site: a.Site, LastSeen: time.Now()}
		for _, ad := range a.Addrs {
			rec.Addrs = append(rec.Addrs, ad.String())
		}
		if err := n.members.Put(rec.Peer, rec); err != nil {
			log.Warnw("save member", "err", err)
		}
	}
}

// onGone tells the market a peer left or stopped advertising.
func (n *Node) onGone(id peer.ID) {
	n.repl.Forget(id)
	n.deliver(func() { n.mkt.PeerGone(time.Now(), market.NodeID(id.String())) })
}

// startMarket creates the market core, hands it the persisted jobs, the
// job-record copies held for others and the prediction history, and opens
// the market's protocols. noBootstrap says no bootstrap peer was given.
func (n *Node) startMarket(noBootstrap bool) error {
	mc := n.marketConfig()
	mc.Solo = noBootstrap && len(n.rememberedPeers()) == 0
	m, err := market.New(mc)
	if err != nil {
		return &ConfigError{Err: err}
	}
	n.mkt = m
	if h := n.loadHistory(); len(h) > 0 {
		m.RestoreHistory(h)
	}
	// Scan, not List: a node may keep more records than List returns
	// (store.MaxListEntries), and must still start.
	var jobs []market.JobRecord
	err = n.jobs.Scan("", func(_ string, j market.JobRecord) (bool, error) {
		jobs = append(jobs, j)
		return true, nil
	})
	if err != nil {
		return n.damaged(fmt.Errorf("load jobs: %w", err))
	}
	if err := n.checkLedger(jobs); err != nil {
		return err
	}
	dropWALCopies(n.cfg.DataDir)
	n.data = data.New(n.ph, n.store, data.Options{Refused: n.countRefused, MaxBytes: n.cfg.DataLimit, Peers: func(k string, r int) []peer.ID { return n.closestPeers(k, r, nil) }, Replicas: m.Config().DataReplicas})
	var fetchImage func(context.Context, string, string) error
	if e := executor.EngineOf(n.cfg.Runner); e != nil {
		dir := filepath.Join(n.cfg.DataDir, "image-fetch")
		_ = os.RemoveAll(dir) // what a stopped node was receiving
		n.imgs = imageshare.New(n.ph, e, imageshare.Options{Dir: dir, Refused: n.countRefused})
		if n.imgCache, err = imageshare.OpenCache(filepath.Join(n.cfg.DataDir, "image-cache.json"), n.cfg.ImageCacheLimit); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		fetchImage = n.fetchImage
	}
	n.startAccounting()
	n.ex = executor.New(executor.Options{FetchImage: fetchImage, Users: n.users, DataDir: n.cfg.DataDir, Store: n.store, Runner: n.cfg.Runner, Data: n.data, Devices: n.units, DataRetention: m.Config().JobRetention, DataReplicas: m.Config().DataReplicas,
		Checkpoints: checkpoints.New(n.ph, n.store, n.countRefused), Peers: n.closestPeers, HostOf: n.hostOf,
		Exited: func(k market.TaskKey, epoch uint64, code int, reason string, outputs *market.DataRef) bool {
			return n.deliver(func() { n.mkt.TaskExited(time.Now(), k, epoch, code, reason, outputs) })
		},
		Accounted:    n.usageEnded,
		PreemptGrace: m.Config().PreemptGrace, TasksStarted: n.met.tasksStarted, TasksEnded: n.met.tasksEnded})
	n.onClose(func(bool) {
		// Graceful: the tasks were stopped and waited for already.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = n.ex.Wait(ctx)
		cancel()
		n.ex.Close()
	})
	n.tr, err = transport.New(n.ph, n.ps, transport.Options{Network: n.cfg.Network, SendDelay: n.cfg.SendDelay, Admitted: n.admitted, Heard: n.gossip.Touch,
		Deliver: func(from market.NodeID, msg market.Msg) {
			n.checks.Prepare(market.TicketOf(msg)) // here, not on the loop
			n.input(func() { n.mkt.Step(time.Now(), from, msg) })
		}})
	if err != nil {
		return fmt.Errorf("node: market transport: %w", err)
	}
	n.onClose(func(bool) { n.tr.Close() })
	n.repl = replication.New(n.ph, replication.Options{Copies: n.copies, Check: n.checkReplica, Refused: n.countRefused,
		Stored: n.copiesStored, Timeout: m.Config().QueryTimeout})
	// Reclaim first: the market takes nothing over before its view has
	// settled, and the copies below would otherwise look orphaned.
	var known []market.NodeID
	for _, ai := range n.rememberedPeers() {
		known = append(known, market.NodeID(ai.ID.String()))
	}
	m.Resume(time.Now(), n.ex.Resumed()) // before Reclaim: the jobs managed here find them running
	m.Reclaim(time.Now(), jobs, known, n.ex.ExitedWhileDown()...)
	if err := n.loadCopies(); err != nil {
		return fmt.Errorf("node: read job-record copies: %w", err)
	}
	if err := n.keepDrained(); err != nil {
		return err
	}
	n.apply(m.Ready())
	n.soft.Store(&softState{SoftState: m.SoftState()})
	n.query = query.New(n.ph, n.answer)
	if len(jobs) > 0 {
		log.Infow("restored jobs", "count", len(jobs))
	}
	return nil
}

// localAdvert is this node's advert as of now.
func (n *Node) localAdvert() gossip.Advert {
	s := n.soft.Load()
	return gossip.Advert{
		Site:          n.cfg.Site,
		Labels:        n.cfg.Labels,
		Limits:        n.cfg.Sandbox.Enforcement(n.cfg.Runner),
		Holds:         n.advertHolds(gossip.MaxHolds),
		Capacity:      n.capacity,
		Free:          s.Free.Clone(),
		Load:          math.Float64frombits(n.load.Load()),
		Queue:         s.Queue,
		PredictedWait: s.wait,
		ReservedGang:  s.Reserved.Gang,
		Unreserved:    s.Reserved.Unreserved.Clone(),
		Waiting:       gossip.WaitingGang{Gang: s.Waiting.Gang, Size: s.Waiting.Size, Request: s.Waiting.Request, Priority: s.Waiting.Priority, Since: s.Waiting.Since, Owner: s.Waiting.Owner},
		HeadRoom:      gossip.HeadRoom{Gang: s.HeadRoom.Gang, At: s.HeadRoom.At, Never: s.HeadRoom.Never},
		Users:         usersToAdvert(s.Users),
		Steal:         gossip.StealOffer(s.Steal),
		Drained:       s.Draining,
	}
}

// usersToAdvert and usersFromAdvert carry market.UserUsage in adverts.
func usersToAdvert(us []market.UserUsage) []gossip.UserUsage {
	var out []gossip.UserUsage
	for _, u := range us {
		out = append(out, gossip.UserUsage{User: u.User, RunningCPU: u.RunningCPU, RunningGPU: u.RunningGPU, RunningJobs: u.RunningJobs,
			WaitingCPU: u.WaitingCPU, WaitingGPU: u.WaitingGPU, WaitingJobs: u.WaitingJobs})
	}
	return out
}

func usersFromAdvert(us []gossip.UserUsage) []market.UserUsage {
	var out []market.UserUsage
	for _, u := range us {
		out = append(out, market.UserUsage{User: u.User, RunningCPU: u.RunningCPU, RunningGPU: u.RunningGPU, RunningJobs: u.RunningJobs,
			WaitingCPU: u.WaitingCPU, WaitingGPU: u.WaitingGPU, WaitingJobs: u.WaitingJobs})
	}
	return out
}

// ID is the node's peer ID.
func (n *Node) ID() peer.ID { return n.host.ID() }

// Host is the node's libp2p host.
func (n *Node) Host() host.Host { return n.host }

// Gater is the node's connection gater (used by the testnet for partitions).
func (n *Node) Gater() *admission.Gater { return n.gater }

// Addrs are the node's full listen multiaddrs, each ending in /p2p/<id>.
func (n *Node) Addrs() []ma.Multiaddr {
	addrs, _ := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.host.ID(), Addrs: n.host.Addrs()})
	return addrs
}

// APIAddr is the host:port the HTTP API listens on.
func (n *Node) APIAddr() string { return n.apiLn.Addr().String() }

// Done is closed when the node has stopped.
func (n *Node) Done() <-chan struct{} { return n.closed }

// Close stops the node gracefully: it announces its departure, saves its
// membership snapshot and closes everything in reverse order of start.
func (n *Node) Close() error {
	n.once.Do(func() { n.teardown(true) })
	return nil
}

// Kill stops the node abruptly, the way kill -9 would look to its peers:
// its tasks are killed at once, without a snapshot or a report, and no
// leave advert goes out; the data dir is left as it is. Called while
// Close runs (agora node does, on a second interrupt), it cuts the drain
// short, kills the tasks and returns when Close is done.
func (n *Node) Kill() {
	if n.ex != nil {
		n.ex.Kill()
	}
	if n.cancel != nil {
		n.cancel()
	}
	n.once.Do(func() { n.teardown(false) })
}

func (n *Node) teardown(graceful bool) {
	if graceful && n.mkt != nil && n.calls != nil {
		ctx, cancel := context.WithTimeout(n.ctx, drainTimeout)
		if err := n.drain(ctx); err != nil {
			log.Warnw("graceful stop: drain incomplete", "err", err)
		}
		cancel()
	}
	if graceful && n.gossip != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n.gossip.Leave(ctx) // returns once a peer was handed the advert
		cancel()
	}
	if graceful && n.mkt != nil && n.calls != nil {
		_ = n.call(func() { n.saveHistory() })
		if n.ex != nil {
			// While the loop runs, so that the stops reach the managers.
			n.ex.StopAll("node stopping")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = n.ex.Wait(ctx)
			cancel()
		}
	}
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i](graceful)
	}
	n.cancel()
	select {
	case <-n.closed:
	default:
		close(n.closed)
	}
	if graceful {
		log.Infow("node stopped")
	}
}
