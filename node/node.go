package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	"github.com/agora-sched/agora/node/admission"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/node/checkpoints"
	"github.com/agora-sched/agora/node/commit"
	"github.com/agora-sched/agora/node/data"
	"github.com/agora-sched/agora/node/executor"
	"github.com/agora-sched/agora/node/p2phost"
	"github.com/agora-sched/agora/node/query"
	"github.com/agora-sched/agora/node/replication"
	"github.com/agora-sched/agora/node/transport"
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
	cfg          Config
	runnerCloser io.Closer     // the task runner this node made, given back at teardown
	ledger       *store.Ledger // the IDs of the jobs stored (ledger.go)
	ledgerFresh  bool          // the ledger file was made at this start
	walCopies    []string      // the write-ahead logs as they were at start (ledger.go)
	store        *store.Store
	host         host.Host
	ph           host.Host                           // what every protocol but admission runs on
	trust        *trust                              // nil without --trust
	relayAdm     atomic.Pointer[admission.Admission] // for the relay's ACL, read off the loop
	dht          *dht.IpfsDHT
	ps           *pubsub.PubSub
	gossip       *gossip.Service
	gater        *admission.Gater
	reg          *prometheus.Registry
	met          *marketMetrics
	info         devices.Info
	capacity     resource.Vector
	members      *store.Bucket[memberRecord]
	mdns         interface{ Close() error }

	api    *api.Server
	apiLn  net.Listener
	checks *ticketChecks // a ticket's byte-only checks, run ahead of the loop; with --trust

	// market plane
	mkt            *market.Market
	netIn          chan func() // network input: dropped when full (loop.go)
	calls          chan func() // exits, acks, API calls: wait for room (loop.go)
	tr             *transport.Transport
	query          *query.Service
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
func New(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg = cfg.withDefaults()
	listen, err := parseListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if cfg.Trust == "" && !cfg.Insecure {
		if err := admission.CheckExposure(listen); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	if err := api.CheckExposure(cfg.API, cfg.Insecure); err != nil {
		return nil, &ConfigError{Err: err}
	}
	boot, err := p2phost.ParseBootstrap(cfg.Bootstrap)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	overrides := cfg.Resources
	if cfg.ResourcesFile != "" {
		ov, err := devices.LoadFile(cfg.ResourcesFile)
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		overrides = &ov
	}
	var psk []byte
	if cfg.SwarmKeyFile != "" {
		if psk, err = p2phost.LoadSwarmKey(cfg.SwarmKeyFile); err != nil {
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
	given := cfg.Runner
	if cfg.Runner, err = executor.RunnerFor(cfg.Runner, cfg.Sandbox, cfg.DataDir); err != nil {
		return nil, &ConfigError{Err: err}
	}

	n := &Node{cfg: cfg, gater: &admission.Gater{}, reg: prometheus.NewRegistry(), closed: make(chan struct{}), netIn: make(chan func(), loopQueue), calls: make(chan func(), callQueue)}
	if c, ok := cfg.Runner.(io.Closer); ok && given == nil {
		n.runnerCloser = c // the runner this node made holds its claim on task IDs
	}
	n.met = newMarketMetrics(n.reg, n)
	// The node lives until Close, not until ctx ends: a caller that cancels
	// ctx on SIGTERM must still get a graceful leave from Close.
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			n.teardown(false)
		}
	}()

	if n.walCopies, err = preserveWAL(cfg.DataDir); err != nil {
		return nil, configErr("data dir %s: copy the write-ahead logs before opening them: %v", cfg.DataDir, err)
	}
	if n.store, err = store.Open(filepath.Join(cfg.DataDir, "db")); err != nil {
		if errors.Is(err, store.ErrLocked) {
			dropWALCopies(cfg.DataDir) // another node's live logs
			return nil, &ConfigError{Err: &dataDirInUse{dir: cfg.DataDir, err: err}}
		}
		if looksDamaged(err) {
			return nil, n.damaged(err)
		}
		return nil, configErr("open store in %s: %v", cfg.DataDir, err)
	}
	if n.ledger, n.ledgerFresh, err = store.OpenLedger(filepath.Join(cfg.DataDir, ledgerFile), false); err != nil {
		return nil, n.damaged(err)
	}
	n.members = store.NewBucket[memberRecord](n.store, "members")
	// A job record grows with the job's replicas and their attempts: 740
	// KB for 1,000 finished replicas, over a plain bucket's value limit.
	// Both are rewritten whole at every change (docs/architecture.md,
	// "Job records"), so they are stored in a binary encoding, a third of
	// JSON's size; JSON ones from earlier versions still read.
	n.jobs = store.NewBucket[market.JobRecord](n.store, "jobs").AllowLarge(replication.MaxFrame).
		WithCodec(market.EncodeJobRecord, market.DecodeJobRecord)
	n.copies = store.NewBucket[replication.Copy](n.store, "replicas").AllowLarge(replication.MaxFrame+4<<10).
		WithCodec(replication.EncodeCopy, replication.DecodeCopy)
	if err := n.loadTrust(); err != nil {
		return nil, err
	}
	bootNo, err := n.nextBoot()
	if err != nil {
		return nil, err
	}

	if n.apiLn, err = net.Listen("tcp", cfg.API); err != nil {
		return nil, configErr("API address %s: %v", cfg.API, err)
	}

	info, err := devices.Discover(devices.DiscoverOptions{DiskPath: cfg.DataDir, DisableNVML: cfg.DisableNVML})
	if err != nil {
		return nil, fmt.Errorf("node: discover resources: %w", err)
	}
	n.info = info
	n.capacity = info.Capacity
	if overrides != nil {
		n.capacity = overrides.Apply(n.capacity)
		// A declared CPU count describes another machine than the one
		// the sampler measures; its load would mislead the predictor.
		n.cpuDeclared = overrides.CPU != nil
	}
	n.soft.Store(&softState{SoftState: market.SoftState{Free: n.capacity.Clone()}})

	key, err := admission.LoadIdentity(cfg.DataDir)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	n.host, err = p2phost.New(p2phost.Options{Key: key, Listen: listen, PSK: psk, Gater: n.gater,
		RelayService: cfg.RelayService, RelayAllowed: n.relayAllowed, NATTraversal: cfg.NATTraversal, Relays: boot,
		NoHolePunching: cfg.NoHolePunching})
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if err := n.store.PutMeta("peer_id", n.host.ID().String()); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := n.startAdmission(); err != nil {
		return nil, err
	}
	n.dht, err = dht.New(n.ph,
		dht.Mode(dht.ModeServer),
		dht.ProtocolPrefix(DHTPrefix),
		dht.BootstrapPeers(boot...))
	if err != nil {
		return nil, fmt.Errorf("node: start DHT: %w", err)
	}
	// Agora's router parameters first, so that cfg.PubSubOptions may
	// override them.
	score, thresholds := gossip.PeerScore(cfg.Network, n.appScore())
	psOpts := append([]pubsub.Option{pubsub.WithGossipSubParams(gossip.GossipSubParams()),
		pubsub.WithPeerScore(score, thresholds), gossip.CutOff(n.cutOff)}, cfg.PubSubOptions...)
	if n.ps, err = pubsub.NewGossipSub(n.ctx, n.ph, psOpts...); err != nil {
		return nil, fmt.Errorf("node: start gossipsub: %w", err)
	}
	if err := n.joinRevocations(); err != nil {
		return nil, err
	}
	// Before the market, whose transport tells it of peers heard from.
	metrics := gossip.NewMetrics(n.reg)
	gcfg := gossip.Config{
		Network:    cfg.Network,
		Interval:   cfg.AdvertInterval,
		RelayDelay: cfg.AdvertRelayDelay,
		Boot:       bootNo,
		Local:      n.localAdvert,
		OnChange:   n.onAdvert,
		OnGone:     n.onGone,
		Metrics:    metrics,
		Flooded:    n.cutOff,
	}
	if n.trust != nil {
		gcfg.Cert, gcfg.Admit = n.trust.chain.Encode(), n.trust.adm.AdmitAdvert
	}
	if n.gossip, err = gossip.New(n.ph, n.ps, gcfg); err != nil {
		return nil, err
	}
	if err := n.startMarket(len(boot) == 0); err != nil {
		return nil, err
	}
	if cfg.MDNS {
		svc := mdns.NewMdnsService(n.host, "agora-"+cfg.Network, &mdnsNotifee{n: n})
		if err := svc.Start(); err != nil {
			return nil, fmt.Errorf("node: start mDNS: %w", err)
		}
		n.mdns = svc
	}

	if err := n.startAPI(); err != nil { // its token first: a client that finds api.addr finds it too
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, apiAddrFile), []byte(n.APIAddr()+"\n"), 0o600); err != nil {
		return nil, configErr("write %s: %v", apiAddrFile, err)
	}
	n.gossip.Start(n.ctx)
	n.wg.Add(3)
	go n.loop()
	go n.joinLoop(boot)
	go n.sampleLoop()
	if cfg.NATTraversal && !cfg.NoHolePunching {
		n.wg.Go(func() { p2phost.KeepPunching(n.ctx, n.host, 5*time.Second, p2phost.PunchAfter, nil) })
	}
	log.Infow("node started", "peer", n.host.ID(), "addrs", n.host.Addrs(), "api", n.APIAddr(), "resources", n.capacity.String())
	return n, nil
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
	n.ex = executor.New(executor.Options{DataDir: n.cfg.DataDir, Store: n.store, Runner: n.cfg.Runner, Data: n.data, DataRetention: m.Config().JobRetention, DataReplicas: m.Config().DataReplicas,
		Checkpoints: checkpoints.New(n.ph, n.store, n.countRefused), Peers: n.closestPeers, HostOf: n.hostOf,
		Exited: func(k market.TaskKey, epoch uint64, code int, reason string, outputs *market.DataRef) bool {
			return n.deliver(func() { n.mkt.TaskExited(time.Now(), k, epoch, code, reason, outputs) })
		},
		PreemptGrace: m.Config().PreemptGrace, TasksStarted: n.met.tasksStarted, TasksEnded: n.met.tasksEnded})
	n.tr, err = transport.New(n.ph, n.ps, transport.Options{Network: n.cfg.Network, SendDelay: n.cfg.SendDelay, Admitted: n.admitted, Heard: n.gossip.Touch,
		Deliver: func(from market.NodeID, msg market.Msg) {
			n.checks.Prepare(market.TicketOf(msg)) // here, not on the loop
			n.input(func() { n.mkt.Step(time.Now(), from, msg) })
		}})
	if err != nil {
		return fmt.Errorf("node: market transport: %w", err)
	}
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
	n.apply(m.Ready())
	n.soft.Store(&softState{SoftState: m.SoftState()})
	n.query = query.New(n.ph, n.answer)
	n.wg.Add(1)
	go n.retentionLoop(m.Config().JobRetention)
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
		Holds:         n.data.Store().Recent(gossip.MaxHolds),
		Capacity:      n.capacity,
		Free:          s.Free.Clone(),
		Load:          math.Float64frombits(n.load.Load()),
		Queue:         s.Queue,
		PredictedWait: s.wait,
		ReservedGang:  s.Reserved.Gang,
		Unreserved:    s.Reserved.Unreserved.Clone(),
		Waiting:       gossip.WaitingGang{Gang: s.Waiting.Gang, Size: s.Waiting.Size, Request: s.Waiting.Request, Priority: s.Waiting.Priority, Since: s.Waiting.Since},
		HeadRoom:      gossip.HeadRoom{Gang: s.HeadRoom.Gang, At: s.HeadRoom.At, Never: s.HeadRoom.Never},
	}
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
		n.gossip.Leave(ctx)
		cancel()
		// Publish only queues the message: give gossipsub a moment to
		// write it to the mesh before the host closes its connections.
		time.Sleep(150 * time.Millisecond)
	}
	if n.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = n.api.Shutdown(ctx)
		cancel()
	} else if n.apiLn != nil {
		_ = n.apiLn.Close()
	}
	if graceful && n.mkt != nil && n.calls != nil {
		_ = n.call(func() { n.saveHistory() })
	}
	if n.ex != nil {
		if graceful {
			n.ex.StopAll("node stopping")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = n.ex.Wait(ctx)
		cancel()
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.ex != nil {
		n.ex.Close()
	}
	if n.runnerCloser != nil {
		_ = n.runnerCloser.Close()
	}
	if n.tr != nil {
		n.tr.Close()
	}
	if n.gossip != nil {
		_ = n.gossip.Close()
	}
	n.closeTrust()
	n.wg.Wait()
	if n.mdns != nil {
		_ = n.mdns.Close()
	}
	if n.dht != nil {
		_ = n.dht.Close()
	}
	if n.host != nil {
		_ = n.host.Close()
		_ = n.host.Network().ResourceManager().Close() // the host leaves it open
	}
	if n.ledger != nil {
		_ = n.ledger.Close()
	}
	if n.store != nil {
		if graceful {
			_ = os.Remove(filepath.Join(n.cfg.DataDir, apiAddrFile))
		}
		_ = n.store.Close()
	}
	select {
	case <-n.closed:
	default:
		close(n.closed)
	}
	if graceful {
		log.Infow("node stopped")
	}
}
