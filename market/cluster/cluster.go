package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/predict"
	"github.com/agora-sched/agora/market/spec"
)

// Clock is where the cluster's events go: the caller keeps the one time
// line (the simulator shares it with arrivals and failures) and hands each
// event back to Handle when it is due. NewQueue is one.
type Clock interface {
	// Now is the virtual time since the start.
	Now() time.Duration
	// Schedule queues ev for at (never before Now); events due at the
	// same time are handled in the order they were scheduled.
	Schedule(at time.Duration, ev Event)
}

// Network carries messages between nodes.
type Network interface {
	// Send is called for every message a node sends: it returns how
	// long after now the message arrives, or false when it is lost.
	Send(from, to int, msg market.Msg) (after time.Duration, ok bool)
	// Link says how long a bulk transfer from one node to another (the
	// job-record copies, over a stream) takes to arrive, or false when
	// the two cannot reach each other.
	Link(from, to int) (after time.Duration, ok bool)
}

// Duplicator is a Network that also delivers some messages twice (a
// retransmission that crossed its ack, a relay's copy): Again is called
// after Send delivered one, and returns when the second copy arrives.
type Duplicator interface {
	Again(from, to int, msg market.Msg) (after time.Duration, ok bool)
}

// Observer is told what the nodes do; every method may be left a no-op.
type Observer interface {
	// Effects is every node's effects, as its market returned them,
	// before the cluster carries them out.
	Effects(node int, effs []market.Effect)
	// Started is a task process starting.
	Started(node int, t market.TaskSpec)
	// Ended is a task process ending, with its exit code (-1 when the
	// market stopped it: r.Stopping); lost says its node crashed under it
	// (or left), and its end is not reported.
	Ended(node int, key market.TaskKey, r *Run, exit int, lost bool)
	// Saved is a job record persisted by its manager.
	Saved(node int, rec market.JobRecord)
	// Left is a leaving node gone for good, its peers told.
	Left(node int)
}

// Config configures a Cluster.
type Config struct {
	// Markets configures each node's market; Self must be set.
	Markets []market.Config
	// Views says whose adverts each node gets (and whom it broadcasts
	// to); nil: every other node's.
	Views [][]int
	// Start is the virtual time zero's date.
	Start time.Time
	// AdvertEvery is how often nodes whose state changed advertise it;
	// 2s.
	AdvertEvery time.Duration
	// Runtime says how long a task started on node runs and its exit
	// code.
	Runtime func(node int, t market.TaskSpec) (time.Duration, int)
	// Clock, Network and Observer; nil: NewQueue, a 1 ms latency without
	// loss, and none.
	Clock    Clock
	Network  Network
	Observer Observer
	// TickEvery, when set, also ticks every node that often, as a real
	// node ticks its market on a fixed period (10ms), and checks the
	// market's promise that a Tick before its NextTick does nothing:
	// Violations lists every time it did not hold.
	TickEvery time.Duration
	// Faults says nodes may crash, restart, join and leave: the cluster
	// keeps what each node persists — its job records, the copies it
	// holds, its prediction history — for its restart, and backs off a
	// node's ticks that leave its deadline due. Off, a run without faults
	// saves the memory and the work.
	Faults bool
}

// Cluster is a set of simulated nodes.
type Cluster struct {
	cfg   Config
	clock Clock
	nodes []*Node
	index map[market.NodeID]int
	views [][]int
	// watchers are the nodes that see each node.
	watchers  [][]int
	dirtyList []int
	spareList []int // dirtyList's other buffer
	gen       uint64
	checks    checks
}

// Node is one simulated node.
type Node struct {
	// ID is the node's ID; Market its market, nil while it is down.
	ID     market.NodeID
	Market *market.Market
	cfg    market.Config
	state  State
	boot   uint64 // restarts; messages to an older boot are lost
	gone   bool   // its peers were told it is gone since it went down
	dirty  bool   // changed since its last advert
	last   advertSum
	adv    market.Peer // its last advert
	tickAt time.Duration
	tick   uint64
	spins  uint
	// running are its task processes.
	running map[market.TaskKey]*Run
	// what it persists
	saved  map[string]market.JobRecord
	copies map[string]Copy
	hist   []predict.TypeStats
	// ended are its processes' recent exits, as a node's executor keeps
	// them: a restart reports them again (market.TaskExit).
	ended []market.TaskExit
}

// reportWindow is how long after a process's exit a restarted node
// reports it again: as long as its market would have repeated the report.
const reportWindow = 2 * time.Minute

// Run is a task process on a node.
type Run struct {
	Epoch    uint64
	Start    time.Duration
	Stopping bool // the market stopped it
	Drained  bool // stopped while its node was leaving
	exit     int
	gen      uint64
	outputs  bool // the task declares outputs
	attempt  int
	manager  market.NodeID
}

// Copy is a job-record copy a node holds for its manager.
type Copy struct {
	Record market.JobRecord
	Peers  []market.NodeID
}

// State is a node's life.
type State uint8

// Node states.
const (
	Up      State = iota // working
	Leaving              // draining before a graceful leave; still working
	Absent               // not joined yet
	Down                 // crashed, not restarted
	Left                 // gone for good
)

// minTickGap is the least a node's next tick lies ahead: the real node
// ticks every 10ms, so nothing is lost, and a deadline that Tick does not
// clear cannot spin a run at one instant.
const minTickGap = time.Millisecond

// New builds a cluster whose nodes are all up but for those listed in
// absent, which join later (Join). Start begins the advert rounds.
func New(cfg Config, absent ...int) (*Cluster, error) {
	if cfg.AdvertEvery <= 0 {
		cfg.AdvertEvery = 2 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = NewQueue()
	}
	if cfg.Network == nil {
		cfg.Network = latency(time.Millisecond)
	}
	if cfg.Observer == nil {
		cfg.Observer = NoObserver{}
	}
	c := &Cluster{cfg: cfg, clock: cfg.Clock, index: map[market.NodeID]int{}}
	n := len(cfg.Markets)
	for i, mc := range cfg.Markets {
		m, err := market.New(mc)
		if err != nil {
			return nil, fmt.Errorf("cluster: node %d: %w", i, err)
		}
		if _, dup := c.index[mc.Self]; dup {
			return nil, fmt.Errorf("cluster: node ID %s twice", mc.Self)
		}
		c.index[mc.Self] = i
		c.nodes = append(c.nodes, &Node{ID: mc.Self, Market: m, cfg: mc, tickAt: -1, running: map[market.TaskKey]*Run{}})
	}
	for _, i := range absent {
		c.nodes[i].state = Absent
	}
	c.views = cfg.Views
	if c.views == nil {
		c.views = make([][]int, n)
		for i := range n {
			for j := range n {
				if j != i {
					c.views[i] = append(c.views[i], j)
				}
			}
		}
	}
	c.watchers = make([][]int, n)
	for i, v := range c.views {
		for _, j := range v {
			c.watchers[j] = append(c.watchers[j], i)
		}
		c.touch(i)
		c.nodes[i].last.queue = -1 // the first advert always goes out
	}
	return c, nil
}

// Start publishes the first adverts and schedules the next round.
func (c *Cluster) Start() {
	c.adverts()
	c.clock.Schedule(c.Now()+c.cfg.AdvertEvery, Event{kind: evAdvert})
	if c.cfg.TickEvery > 0 {
		c.clock.Schedule(c.Now()+c.cfg.TickEvery, Event{kind: evTickAll})
	}
}

// Now is the virtual time since the start.
func (c *Cluster) Now() time.Duration { return c.clock.Now() }

// Time is the virtual time as a date, what the markets are given.
func (c *Cluster) Time() time.Time { return c.cfg.Start.Add(c.clock.Now()) }

// N is the number of nodes.
func (c *Cluster) N() int { return len(c.nodes) }

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Index returns the index of the node with ID id.
func (c *Cluster) Index(id market.NodeID) (int, bool) {
	i, ok := c.index[id]
	return i, ok
}

// State is node i's state.
func (c *Cluster) State(i int) State { return c.nodes[i].state }

// Running lists node i's task processes.
func (c *Cluster) Running(i int) map[market.TaskKey]*Run { return c.nodes[i].running }

// alive reports whether node i works: up or leaving.
func (c *Cluster) alive(i int) bool { return c.nodes[i].state <= Leaving }

// reachable reports whether a broadcast reaches node j: it is alive, or
// crashed so recently that its peers still count it as a member.
func (c *Cluster) reachable(j int) bool {
	nd := c.nodes[j]
	return c.alive(j) || (nd.state == Down && !nd.gone)
}

// Submit submits a job to node i, as its API would.
func (c *Cluster) Submit(i int, id string, js spec.Job) error {
	return c.SubmitAs(i, id, js, "")
}

// SubmitAs submits a job of owner to node i (market.SubmitAs).
func (c *Cluster) SubmitAs(i int, id string, js spec.Job, owner string) error {
	if err := c.nodes[i].Market.SubmitAs(c.Time(), id, js, owner); err != nil {
		return err
	}
	c.drain(i)
	return nil
}

// Do runs fn on node i's market and carries out what it caused: the
// caller's way to make a node act (cancel a job, drain).
func (c *Cluster) Do(i int, fn func(m *market.Market, now time.Time)) {
	fn(c.nodes[i].Market, c.Time())
	c.drain(i)
}

// touch marks node i as possibly changed since its last advert.
func (c *Cluster) touch(i int) {
	if nd := c.nodes[i]; !nd.dirty {
		nd.dirty = true
		c.dirtyList = append(c.dirtyList, i)
	}
}

// advertSum is what an advert says that placement depends on; a node
// re-advertises only when it changes.
type advertSum struct {
	cpu, mem, gpu int64
	queue         int
	reserved      string // the gang the node keeps room for
	unreserved    int64  // CPU free beside it
	waiting       string // the first gang it has waited long to place
	head          string // the head it sees, and when it has room for it
	headAt        time.Time
	headNever     bool
	users         string // what the limited users' jobs hold and wait for
	steal         market.StealOffer
}

// adverts publishes the adverts of the nodes whose free room or queue
// changed since their last one: the views hold no expiry, and an
// unchanged advert would tell the same story.
func (c *Cluster) adverts() {
	// An advert may make its watchers act (a moved head starts a task),
	// which touches them: they advertise in the next round.
	list := c.dirtyList
	c.dirtyList = c.spareList[:0]
	slices.Sort(list)
	for _, j := range list {
		nd := c.nodes[j]
		nd.dirty = false
		if !c.alive(j) {
			continue // a crashed or absent node publishes nothing
		}
		c.advertise(j, false)
	}
	c.spareList = list[:0]
}

// advertise publishes node j's advert to its watchers if it changed, or
// whatever it says when force.
func (c *Cluster) advertise(j int, force bool) {
	nd := c.nodes[j]
	o := nd.Market
	free, res, w, hr, users := o.Free(), o.Reserved(), o.Waiting(), o.HeadRoom(), o.UserUsage()
	sum := advertSum{cpu: free.CPU, mem: free.Memory, gpu: free.GPUShare(), queue: o.QueueLen(),
		reserved: res.Gang, unreserved: res.Unreserved.CPU, waiting: w.Gang, head: hr.Gang, headAt: hr.At, headNever: hr.Never,
		users: fmt.Sprint(users), steal: o.StealOffer()}
	if sum == nd.last && !force {
		return
	}
	nd.last = sum
	now := c.Time()
	p := market.Peer{ID: nd.ID, Site: nd.cfg.Site, Labels: nd.cfg.Labels, Limits: nd.cfg.Limits, Capacity: o.Capacity(), Free: free, Queue: sum.queue,
		PredictedWait: o.PredictedWait(now), Reserved: res, Waiting: w, HeadRoom: hr, Users: users, Steal: sum.steal, Boot: nd.boot + 1}
	nd.adv = p
	for _, i := range c.watchers[j] {
		if !c.alive(i) {
			continue
		}
		if _, heard := c.cfg.Network.Link(j, i); !heard {
			continue // cut off: the advert does not reach i (Hear, after the heal)
		}
		c.nodes[i].Market.Advert(now, p)
		// A loaded peer may make an idle node steal; a moved head may
		// start queued tasks or its gang.
		c.drain(i)
	}
}

// wake schedules node i's next tick for when its market says it has work
// (market.NextTick); an earlier pending tick is kept, a later one is
// superseded.
func (c *Cluster) wake(i int) {
	nd := c.nodes[i]
	nt := nd.Market.NextTick()
	if nt.IsZero() {
		return
	}
	gap := minTickGap << nd.spins // spins stay 0 without faults
	at := max(nt.Sub(c.cfg.Start), c.Now()+gap)
	if nd.tickAt >= 0 && nd.tickAt <= at {
		return
	}
	nd.tickAt = at
	c.gen++
	nd.tick = c.gen
	c.clock.Schedule(at, Event{kind: evTick, node: i, gen: c.gen})
}

// send hands a message from node from to node to to the network.
func (c *Cluster) send(from, to int, msg market.Msg) {
	after, ok := c.cfg.Network.Send(from, to, msg)
	if !ok {
		return
	}
	// gen is the boot of the node it is sent to: a node that crashes
	// meanwhile never gets it, even after it restarts.
	c.clock.Schedule(c.Now()+after, Event{kind: evDeliver, node: to, from: from, msg: msg, gen: c.nodes[to].boot})
	if d, ok := c.cfg.Network.(Duplicator); ok {
		if again, ok := d.Again(from, to, msg); ok {
			c.clock.Schedule(c.Now()+again, Event{kind: evDeliver, node: to, from: from, msg: msg, gen: c.nodes[to].boot})
		}
	}
}
