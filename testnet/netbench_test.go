package testnet

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// Real-network benchmarks: in-process nodes with real libp2p hosts on
// 127.0.0.1 (the testnet), measured from the outside or through the
// node's tracing hooks (Config.OnRoundClosed, Config.PubSubOptions).
//
//	go test -run '^$' -bench Net -benchtime 1x ./testnet/
//
// With -benchtime 1x each benchmark makes one measurement; the set takes
// about 40 s on two cores. make bench repeats it (-count, NETCOUNT=3) so
// that the report shows how far the figures move between repetitions.

// echoProtocol is a bare request-response protocol registered on the
// benchmark nodes' hosts only: it echoes every frame it reads, framed as
// the market stream is.
const echoProtocol = protocol.ID("/agora/bench-echo/1.0.0")

// serveEcho echoes frames on s until it ends.
func serveEcho(s network.Stream) {
	defer s.Close()
	r, w := bufio.NewReader(s), bufio.NewWriter(s)
	for {
		b, err := wire.ReadFrame(r, wire.MaxMessageBytes)
		if err != nil {
			return
		}
		if wire.WriteFrame(w, b) != nil || w.Flush() != nil {
			_ = s.Reset()
			return
		}
	}
}

// echoConn is one long-lived echo stream from one node to another, as the
// market transport keeps one long-lived stream per peer.
type echoConn struct {
	s network.Stream
	r *bufio.Reader
	w *bufio.Writer
}

func openEcho(tb testing.TB, from, to *Node) *echoConn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := from.Host().NewStream(ctx, to.ID(), echoProtocol)
	if err != nil {
		tb.Fatalf("open echo stream node %d → %d: %v", from.Index, to.Index, err)
	}
	return &echoConn{s: s, r: bufio.NewReader(s), w: bufio.NewWriter(s)}
}

// roundTrip sends payload and waits for its echo.
func (c *echoConn) roundTrip(tb testing.TB, payload []byte) time.Duration {
	tb.Helper()
	d, err := c.exchange(payload)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// exchange sends payload, waits for its echo and times the two.
func (c *echoConn) exchange(payload []byte) (time.Duration, error) {
	t0 := time.Now()
	if err := wire.WriteFrame(c.w, payload); err != nil {
		return 0, fmt.Errorf("echo write: %w", err)
	}
	if err := c.w.Flush(); err != nil {
		return 0, fmt.Errorf("echo flush: %w", err)
	}
	b, err := wire.ReadFrame(c.r, wire.MaxMessageBytes)
	d := time.Since(t0)
	if err != nil || len(b) != len(payload) {
		return 0, fmt.Errorf("echo read: %d bytes, %v", len(b), err)
	}
	return d, nil
}

// cfpPayload is a CFP as the market encodes it, so that the bare round
// trip carries as many bytes as an auction's messages do.
func cfpPayload(tb testing.TB, manager *Node) []byte {
	tb.Helper()
	key := market.TaskKey{Job: "j-0123456789abcdef", Task: "t000", Replica: 0}
	b, err := wire.Encode(market.CFP{
		Auction: market.AuctionID{Key: key, Epoch: 1},
		Manager: market.NodeID(manager.ID().String()),
		Task:    market.TaskOffer{Key: key, Type: "bench", Priority: 5, Request: resource.Request{CPU: 100}},
	})
	if err != nil {
		tb.Fatalf("encode CFP: %v", err)
	}
	return b
}

// roundLog collects the auction rounds every node reports.
type roundLog struct {
	ch chan market.RoundClosed
}

func (l *roundLog) add(rc market.RoundClosed) {
	select {
	case l.ch <- rc:
	default: // the benchmark fails on a missing round rather than block a loop
	}
}

// wait returns the next round reported, or fails after d.
func (l *roundLog) wait(tb testing.TB, d time.Duration, what string) market.RoundClosed {
	tb.Helper()
	select {
	case rc := <-l.ch:
		return rc
	case <-time.After(d):
		tb.Fatalf("no auction round closed within %v after %s", d, what)
	}
	return market.RoundClosed{}
}

// roundResult is what measureRounds measured.
type roundResult struct {
	Round  []time.Duration // CFPs sent → award decided, per round
	Accept []time.Duration // CFPs sent → award accepted (manager's event log)
	Bare   []time.Duration // echo round trips between the same hosts, after each round
	During []time.Duration // echo round trips between the same hosts, all along the rounds
	Bids   int             // bids over all rounds
	Short  int             // rounds that closed with fewer bids than invited nodes: the window ran out
	Bytes  int             // echo payload
}

// duringGap is the pause between two of the prober's echo round trips:
// frequent enough that every round meets some, rare enough that the
// prober takes about a percent of a core.
const duringGap = 2 * time.Millisecond

// probeDuring times echo round trips over conns, one ordered pair after
// another with duringGap between them, until stop is closed, and returns
// them, or the first error.
func probeDuring(conns []*echoConn, payload []byte, stop <-chan struct{}) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return out, nil
		case <-time.After(duringGap):
		}
		d, err := conns[i%len(conns)].exchange(payload)
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
}

// measureRounds submits rounds one-task jobs one after the other, each to
// the next node in turn, waits for each job's auction round to close, and
// times the baseline, echo round trips between the same hosts, two ways:
// after each round, one over every ordered pair of nodes (Bare); and all
// along, from a prober of its own that sends one every duringGap
// (During), so that the baseline meets what the rounds meet — the
// previous job's task start, its reports, record commits and
// replication — at the same moments.
func measureRounds(tb testing.TB, net *Net, log *roundLog, rounds int) roundResult {
	tb.Helper()
	nodes := net.Up()
	conns := map[[2]int]*echoConn{}
	var probe []*echoConn
	for _, a := range nodes {
		for _, c := range nodes {
			if a != c {
				conns[[2]int{a.Index, c.Index}] = openEcho(tb, a, c)
				probe = append(probe, openEcho(tb, a, c))
			}
		}
	}
	defer func() {
		for _, c := range conns {
			_ = c.s.Close()
		}
		for _, c := range probe {
			_ = c.s.Close()
		}
	}()
	var res roundResult
	payload := cfpPayload(tb, nodes[0])
	res.Bytes = len(payload)
	// Warm the HTTP client's and the echo streams' connections.
	for _, nd := range nodes {
		if _, _, err := nd.API("GET", "/v1/id", nil); err != nil {
			tb.Fatalf("warm up node %d: %v", nd.Index, err)
		}
	}
	for _, c := range conns {
		c.roundTrip(tb, payload)
	}
	for _, c := range probe {
		c.roundTrip(tb, payload)
	}
	type probeResult struct {
		ds  []time.Duration
		err error
	}
	stop, probed := make(chan struct{}), make(chan probeResult, 1)
	go func() {
		ds, err := probeDuring(probe, payload, stop)
		probed <- probeResult{ds, err}
	}()
	defer func() { // on every way out, Fatal included
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	managers := map[string]*Node{}
	rcs := map[string]market.RoundClosed{}
	for i := range rounds {
		nd := nodes[i%len(nodes)]
		id, err := nd.Submit(trivialJob(fmt.Sprintf("round-%d", i), 1))
		if err != nil {
			tb.Fatalf("submit to node %d: %v", nd.Index, err)
		}
		managers[id] = nd
		// Wait for this job's round; a later round of an earlier job
		// (after every bidder declined) counts as well.
		for {
			rc := log.wait(tb, 10*time.Second, "submitting job "+id)
			rcs[rc.Auction.Key.Job] = rc
			res.Round = append(res.Round, rc.Closed.Sub(rc.Opened))
			res.Bids += rc.Bids
			if rc.Bids < rc.Invited {
				res.Short++ // nobody refuses here: capacity never limits
			}
			if rc.Auction.Key.Job == id {
				break
			}
		}
		for _, a := range nodes {
			for _, c := range nodes {
				if a != c {
					res.Bare = append(res.Bare, conns[[2]int{a.Index, c.Index}].roundTrip(tb, payload))
				}
			}
		}
	}
	close(stop)
	pr := <-probed
	if pr.err != nil {
		tb.Fatalf("prober: %v", pr.err)
	}
	res.During = pr.ds
	// The award's acceptance, from each manager's event log, timed from
	// the opening of the job's last round.
	waitfor.Cond(tb, 10*time.Second, "every award to be accepted", func() bool {
		res.Accept = res.Accept[:0]
		for id, nd := range managers {
			rc := rcs[id]
			var at time.Time
			for _, line := range nd.Events(id) {
				if t, text, ok := parseEvent(line); ok && strings.Contains(text, ": awarded to ") {
					at = t
				}
			}
			if at.IsZero() {
				return false
			}
			res.Accept = append(res.Accept, at.Sub(rc.Opened))
		}
		return true
	})
	return res
}

// newRoundNet starts 4 big nodes with the given bid window (0: the
// default) reporting their auction rounds, with the echo protocol on
// every host.
func newRoundNet(tb testing.TB, window time.Duration) (*Net, *roundLog) {
	tb.Helper()
	log := &roundLog{ch: make(chan market.RoundClosed, 1024)}
	net := New(tb, 4, Options{
		Resources: func(int) string { return bigNode },
		Configure: func(_ int, c *node.Config) {
			c.Market.BidWindow = window
			c.OnRoundClosed = log.add
		},
	})
	net.WaitConverged(15 * time.Second)
	for _, nd := range net.Up() {
		nd.Host().SetStreamHandler(echoProtocol, serveEcho)
	}
	return net, log
}

// BenchmarkNetAuctionRound: 4 nodes; one-task jobs submitted one at a
// time, each to the next node; reports the auction round latency, CFPs
// sent → award decided, as the manager's core timed it (market.RoundClosed:
// from the loop turn that opened the round to the one that took the last
// bid needed), and CFPs sent → award accepted (the manager's event log),
// next to a bare request-response round trip over a long-lived libp2p
// stream between the same hosts, carrying a CFP's bytes, timed after every
// round over every ordered pair. Runs with the default bid window and with
// a 2 ms one; window_closed_frac is the share of rounds that closed with
// fewer bids than invited nodes, i.e. on the window rather than on the
// last answer. other_busy_frac and steal_frac (Linux) say how much of the
// machine's CPU other processes and the hypervisor took meanwhile, so
// that a noisy repetition can be told from a slow build. It fails when
// the round's p99 is more than 2 ms over the bare round trip's p99
// measured during the rounds (issue 24).
func BenchmarkNetAuctionRound(b *testing.B) {
	for _, window := range []time.Duration{0, 2 * time.Millisecond} {
		name := "window=" + window.String()
		if window == 0 {
			name = "window=default" // market.Config's, 50 ms
		}
		b.Run(name, func(b *testing.B) {
			net, log := newRoundNet(b, window)
			var total roundResult
			m0 := sampleMachine()
			for b.Loop() {
				r := measureRounds(b, net, log, 400)
				total.Round = append(total.Round, r.Round...)
				total.Accept = append(total.Accept, r.Accept...)
				total.Bare = append(total.Bare, r.Bare...)
				total.During = append(total.During, r.During...)
				total.Bids += r.Bids
				total.Short += r.Short
				total.Bytes = r.Bytes
			}
			r50, r99 := quantile(total.Round, 0.50), quantile(total.Round, 0.99)
			b50, b99 := quantile(total.Bare, 0.50), quantile(total.Bare, 0.99)
			b.ReportMetric(r50, "round_p50_ms")
			b.ReportMetric(r99, "round_p99_ms")
			b.ReportMetric(b50, "bare_p50_ms")
			b.ReportMetric(b99, "bare_p99_ms")
			if b99 > 0 {
				b.ReportMetric(r99/b99, "round_p99_over_bare_p99")
			}
			d50, d99 := quantile(total.During, 0.50), quantile(total.During, 0.99)
			b.ReportMetric(d50, "bare_during_p50_ms")
			b.ReportMetric(d99, "bare_during_p99_ms")
			if d99 > 0 {
				b.ReportMetric(r99/d99, "round_p99_over_bare_during_p99")
			}
			// Issue 24's target: a round that needs remote bids adds at most
			// 2 ms p99 over the bare round trip measured during the rounds
			// (asked of three nodes; here four, the harder case).
			b.ReportMetric(r99-d99, "round_p99_minus_bare_during_p99_ms")
			if r99-d99 > 2 {
				b.Errorf("round p99 %.2f ms is %.2f ms over the bare round trip's p99 during the rounds (%.2f ms); the target is 2 ms", r99, r99-d99, d99)
			}
			b.ReportMetric(quantile(total.Accept, 0.50), "accept_p50_ms")
			b.ReportMetric(quantile(total.Accept, 0.99), "accept_p99_ms")
			b.ReportMetric(float64(total.Short)/float64(len(total.Round)), "window_closed_frac")
			reportMachine(b, m0)
			b.Logf("%d rounds (%.2f bids each, %d closed by the window), %d bare round trips of %d bytes after the rounds and %d during them",
				len(total.Round), float64(total.Bids)/float64(len(total.Round)), total.Short, len(total.Bare), total.Bytes, len(total.During))
		})
	}
}

// TestNetAuctionRoundSmoke runs the round benchmark's measurement small:
// every round is reported once, over the network, with sane figures.
func TestNetAuctionRoundSmoke(t *testing.T) {
	net, log := newRoundNet(t, 0)
	r := measureRounds(t, net, log, 8)
	if len(r.Round) < 8 || len(r.Accept) != 8 || len(r.Bare) != 8*12 || len(r.During) == 0 || r.Bids < 8 {
		t.Fatalf("%d rounds, %d acceptances, %d+%d bare round trips, %d bids", len(r.Round), len(r.Accept), len(r.Bare), len(r.During), r.Bids)
	}
	for _, ds := range [][]time.Duration{r.Round, r.Accept, r.Bare, r.During} {
		for _, d := range ds {
			if d <= 0 || d > 5*time.Second {
				t.Fatalf("implausible duration %v among %v", d, ds)
			}
		}
	}
	t.Logf("round p50 %.2f ms, bare p50 %.3f ms", quantile(r.Round, 0.5), quantile(r.Bare, 0.5))
}

// BenchmarkNetPlacements: 4 nodes; every iteration submits 16 jobs × 25
// trivial tasks at once, each job to a random node, and reports tasks
// started per second over the whole cluster (first submit → last process
// start, from the executors' runtime records).
// It is BenchmarkPlacement's measurement with a larger burst.
//
// Two more figures in the same run: awards_per_s, the scheduling decisions
// alone (first submit → last award accepted by its executor, from the
// managers' events; the process starts still run beside them), and
// spawn_ceiling_per_s, the baseline: as many bare starts of the same
// process (work directory, fork and exec, pipes, one goroutine per node)
// with no scheduler at all — what this machine allows a start rate to
// reach. placements_vs_spawn_ceiling is their ratio.
//
// The cost of trust: the starts-elsewhere cluster is measured against
// the same cluster whose nodes an authority admitted and whose jobs are
// signed (every ticket and chain verified by the manager, each bidder
// and executor, and the holders of its record), in 120 pairs of bursts
// (trustPairs). awards_trust_vs_open_paired is the geometric mean of the
// pairs' ratios of award rates, trusted over open (trust_pair_ratio_p25
// and _p75 show their spread), awards_trust_vs_open the ratio over all
// bursts, cpu_per_award_trust_vs_open the process's CPU time per award,
// trusted over open. A paired ratio under 0.95 fails the benchmark.
func BenchmarkNetPlacements(b *testing.B) {
	cfg := placementConfig{Jobs: 16, Tasks: 25, APISamples: 20, Timeout: 2 * time.Minute, Poll: 250 * time.Millisecond}
	m0 := sampleMachine()
	net := newPlacementNet(b, 4, nil)
	total, _ := benchPlacements(b, net, cfg, 3, 4)
	if total.Placed < total.Tasks || total.Missing > 0 {
		b.Fatalf("placed %d of %d tasks (%d without a start time)", total.Placed, total.Tasks, total.Missing)
	}
	ceiling := spawnCeiling(b, cfg.Jobs*cfg.Tasks, 4)
	// The second cluster, after the first has stopped: the same jobs,
	// drawn the same way, with the starts kept off the machine.
	for i := range net.N() {
		net.Stop(i)
	}
	// And the same cluster admitted by an authority, every job signed:
	// its ticket and chain verified by the manager, each bidder and
	// executor, and the holders of its record; the two in pairs of
	// bursts.
	sched, schedT, cpuOpen, cpuTrust, pairRatios := trustPairs(b, cfg, 120)
	for _, r := range []placementResult{sched, schedT} {
		if r.Placed < r.Tasks || r.Missing > 0 || r.Awarded < r.Tasks {
			b.Fatalf("starts elsewhere: placed %d of %d tasks (%d without a start time, %d with an accepted award)", r.Placed, r.Tasks, r.Missing, r.Awarded)
		}
	}
	b.ReportMetric(total.PlacementsPerSec(), "placements_per_s")
	b.ReportMetric(total.AwardsPerSec(), "awards_per_s")
	b.ReportMetric(ceiling, "spawn_ceiling_per_s")
	b.ReportMetric(total.PlacementsPerSec()/ceiling, "placements_vs_spawn_ceiling")
	b.ReportMetric(quantile(total.Latency, 0.50), "start_p50_ms")
	b.ReportMetric(quantile(total.Latency, 0.99), "start_p99_ms")
	b.ReportMetric(sched.AwardsPerSec(), "awards_per_s_starts_elsewhere")
	b.ReportMetric(sched.AwardsPerSec()/total.AwardsPerSec(), "awards_starts_elsewhere_vs_here")
	b.ReportMetric(schedT.AwardsPerSec(), "awards_per_s_trust")
	b.ReportMetric(schedT.AwardsPerSec()/sched.AwardsPerSec(), "awards_trust_vs_open")
	trustRatio := geomean(pairRatios)
	b.ReportMetric(trustRatio, "awards_trust_vs_open_paired")
	b.ReportMetric(pairRatios[len(pairRatios)/4], "trust_pair_ratio_p25")
	b.ReportMetric(pairRatios[len(pairRatios)*3/4], "trust_pair_ratio_p75")
	cpuRatio := (float64(cpuTrust) / float64(schedT.Awarded)) / (float64(cpuOpen) / float64(sched.Awarded))
	b.ReportMetric(cpuRatio, "cpu_per_award_trust_vs_open")
	reportMachine(b, m0)
	b.Logf("%d tasks, %d placed, %d succeeded, %d timed by their process start, %d with an accepted award; span %v, to the last award %v",
		total.Tasks, total.Placed, total.Succeeded, total.ProcStarts, total.Awarded, total.Span.Round(time.Millisecond), total.AwardSpan.Round(time.Millisecond))
	b.Logf("starts elsewhere: %d tasks, %d placed, %d succeeded, %d with an accepted award; to the last award %v",
		sched.Tasks, sched.Placed, sched.Succeeded, sched.Awarded, sched.AwardSpan.Round(time.Millisecond))
	b.Logf("starts elsewhere, with trust: %d tasks, %d with an accepted award; to the last award %v",
		schedT.Tasks, schedT.Awarded, schedT.AwardSpan.Round(time.Millisecond))
	// Issue 21's target: signatures and chains cost under 5 % of the
	// award rate.
	b.Logf("with trust: %.3fx the award rate (geometric mean of %d pairs; %.3fx over all of them), %.3fx the process CPU per award",
		trustRatio, len(pairRatios), schedT.AwardsPerSec()/sched.AwardsPerSec(), cpuRatio)
	if trustRatio < 0.95 {
		b.Fatalf("with trust the cluster accepted %.3fx the awards per second of the open one (geometric mean over pairs of bursts; target at least 0.95)", trustRatio)
	}
}

// advertTracer counts one node's traffic on the adverts topic.
type advertTracer struct {
	topic string
	mu    sync.Mutex
	self  peer.ID
	c     advertCounts
	mesh  map[peer.ID]bool
	own   map[string]bool // seqnos of own adverts already counted
}

// advertCounts are cumulative counts of one node's adverts-topic traffic.
type advertCounts struct {
	SentMsgs     int64 // advert messages put on outbound RPCs (own and forwarded)
	SentMsgBytes int64 // their protobuf size (data, from, seqno, signature, key)
	SentRPCBytes int64 // every outbound pubsub RPC, control included
	Own          int64 // adverts this node published (and sent to a peer)
	Received     int64 // distinct adverts of others delivered
	Dups         int64 // duplicate copies of adverts dropped
}

func (c advertCounts) sub(o advertCounts) advertCounts {
	return advertCounts{c.SentMsgs - o.SentMsgs, c.SentMsgBytes - o.SentMsgBytes, c.SentRPCBytes - o.SentRPCBytes,
		c.Own - o.Own, c.Received - o.Received, c.Dups - o.Dups}
}

func (c advertCounts) add(o advertCounts) advertCounts {
	return advertCounts{c.SentMsgs + o.SentMsgs, c.SentMsgBytes + o.SentMsgBytes, c.SentRPCBytes + o.SentRPCBytes,
		c.Own + o.Own, c.Received + o.Received, c.Dups + o.Dups}
}

func (t *advertTracer) setSelf(id peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.self = id
}

func (t *advertTracer) counts() (advertCounts, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c, len(t.mesh)
}

func (t *advertTracer) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.SentRPCBytes += int64(proto.Size(&rpc.RPC))
	for _, m := range rpc.GetPublish() {
		if m.GetTopic() != t.topic {
			continue
		}
		t.c.SentMsgs++
		t.c.SentMsgBytes += int64(proto.Size(m))
		// The raw tracer is not told of local deliveries: count this
		// node's own adverts by their first copy sent.
		if peer.ID(m.GetFrom()) == t.self && !t.own[string(m.GetSeqno())] {
			t.own[string(m.GetSeqno())] = true
			t.c.Own++
		}
	}
}

func (t *advertTracer) DeliverMessage(msg *pubsub.Message) {
	if msg.GetTopic() != t.topic {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.Received++ // the raw tracer hears only of others' messages
}

func (t *advertTracer) DuplicateMessage(msg *pubsub.Message) {
	if msg.GetTopic() != t.topic {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.Dups++
}

func (t *advertTracer) Graft(p peer.ID, topic string) {
	if topic != t.topic {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mesh[p] = true
}

func (t *advertTracer) Prune(p peer.ID, topic string) {
	if topic != t.topic {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mesh, p)
}

// OnClosedOutboundStream: the peer is gone, and with it from the mesh
// (GossipSub drops it without a Prune).
func (t *advertTracer) OnClosedOutboundStream(p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mesh, p)
}

func (*advertTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (*advertTracer) Join(string)                                          {}
func (*advertTracer) Leave(string)                                         {}
func (*advertTracer) ValidateMessage(*pubsub.Message)                      {}
func (*advertTracer) RejectMessage(*pubsub.Message, string)                {}
func (*advertTracer) ThrottlePeer(peer.ID)                                 {}
func (*advertTracer) RecvRPC(*pubsub.RPC)                                  {}
func (*advertTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (*advertTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (*advertTracer) UndeliverableMessage(*pubsub.Message)                 {}

// BenchmarkNetAdverts: 8 idle nodes at the production advert interval
// (node.DefaultAdvertInterval); after membership converged and the mesh
// settled, counts for 10 s each node's adverts-topic traffic with a
// GossipSub raw tracer. Reports advert bytes sent per node per second (own
// and forwarded adverts, whole signed pubsub messages), all pubsub bytes
// sent per node per second (control and gossip included), and duplicate
// copies received per distinct advert, next to GossipSub's D in use
// (gossip.GossipSubParams) and the D/2 − 1 bound it is compared with. The
// baseline, a second cluster measured the same way in the same run, relays
// adverts at once (no gossip.Config.RelayDelay hold): the *_no_hold
// figures and the ratios against them.
func BenchmarkNetAdverts(b *testing.B) {
	var held, base advertRun
	for b.Loop() {
		held = measureAdverts(b, 0)
		base = measureAdverts(b, -1)
	}
	d := gossip.GossipSubParams().D
	b.ReportMetric(held.bytesPerNodeS(), "advert_bytes_per_node_s")
	b.ReportMetric(held.rpcBytesPerNodeS(), "pubsub_bytes_per_node_s")
	b.ReportMetric(float64(held.c.SentMsgBytes)/float64(max(held.c.SentMsgs, 1)), "advert_msg_bytes")
	b.ReportMetric(float64(held.c.Own)/held.perNodeS(), "adverts_per_node_s")
	b.ReportMetric(held.dups(), "dup_per_msg")
	b.ReportMetric(base.dups(), "dup_per_msg_no_hold")
	b.ReportMetric(held.dups()/max(base.dups(), 1e-9), "dup_vs_no_hold")
	b.ReportMetric(held.rpcBytesPerNodeS()/max(base.rpcBytesPerNodeS(), 1e-9), "pubsub_bytes_vs_no_hold")
	b.ReportMetric(held.mesh, "mesh_degree")
	b.ReportMetric(float64(d), "gossipsub_D")
	b.ReportMetric(float64(d)/2-1, "D_half_minus_1")
	for _, r := range []struct {
		name string
		run  advertRun
	}{{"relay hold " + gossip.DefaultRelayDelay.String(), held}, {"no hold (baseline)", base}} {
		c := r.run.c
		b.Logf("%s: %d nodes, %v: %d adverts published, %d delivered to others, %d duplicates; %d advert messages sent (%d bytes), %d pubsub RPC bytes sent",
			r.name, r.run.n, r.run.elapsed.Round(time.Millisecond), c.Own, c.Received, c.Dups, c.SentMsgs, c.SentMsgBytes, c.SentRPCBytes)
	}
}

// advertRun is one cluster's advert traffic over a measured window.
type advertRun struct {
	n       int
	elapsed time.Duration
	c       advertCounts
	mesh    float64 // mean advert-topic mesh degree at the end
}

func (r advertRun) perNodeS() float64         { return float64(r.n) * r.elapsed.Seconds() }
func (r advertRun) bytesPerNodeS() float64    { return float64(r.c.SentMsgBytes) / r.perNodeS() }
func (r advertRun) rpcBytesPerNodeS() float64 { return float64(r.c.SentRPCBytes) / r.perNodeS() }
func (r advertRun) dups() float64             { return float64(r.c.Dups) / float64(r.c.Received) }

// measureAdverts starts 8 nodes relaying adverts after relayDelay
// (node.Config.AdvertRelayDelay), waits for membership and the mesh to
// settle, counts 10 s of advert traffic and stops the nodes.
func measureAdverts(b *testing.B, relayDelay time.Duration) advertRun {
	const n = 8
	const window = 10 * time.Second
	topic := gossip.AdvertTopic(node.DefaultNetwork)
	tracers := make([]*advertTracer, n)
	for i := range tracers {
		tracers[i] = &advertTracer{topic: topic, mesh: map[peer.ID]bool{}, own: map[string]bool{}}
	}
	net := New(b, n, Options{
		Interval:  node.DefaultAdvertInterval,
		Topology:  Star,
		Resources: func(int) string { return bigNode },
		Configure: func(i int, c *node.Config) {
			c.PubSubOptions = append(c.PubSubOptions, pubsub.WithRawTracer(tracers[i]))
			c.AdvertRelayDelay = relayDelay
		},
	})
	defer func() { // the baseline cluster runs alone
		for i := range n {
			net.Stop(i)
		}
	}()
	for _, nd := range net.Up() {
		tracers[nd.Index].setSelf(nd.ID())
	}
	net.WaitConverged(30 * time.Second)
	time.Sleep(node.DefaultAdvertInterval) // let the mesh settle past the joins
	before := make([]advertCounts, n)
	for i, t := range tracers {
		before[i], _ = t.counts()
	}
	t0 := time.Now()
	time.Sleep(window)
	r := advertRun{n: n, elapsed: time.Since(t0)}
	meshSum := 0
	for i, t := range tracers {
		c, mesh := t.counts()
		r.c = r.c.add(c.sub(before[i]))
		meshSum += mesh
	}
	r.mesh = float64(meshSum) / n
	if r.c.Own == 0 || r.c.Received == 0 {
		b.Fatalf("no adverts seen in %v: %+v", r.elapsed, r.c)
	}
	return r
}

// settledMem collects garbage until the heap stops shrinking and returns
// the memory statistics then.
func settledMem() runtime.MemStats {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		runtime.GC()
		var next runtime.MemStats
		runtime.ReadMemStats(&next)
		if next.HeapInuse >= ms.HeapInuse {
			return next
		}
		ms = next
	}
	return ms
}

// BenchmarkNetIdleMemory: Go heap in use (after garbage collection) before
// and after starting 8 nodes that then idle for 3 s with membership
// converged, divided by 8. Also the heap of live objects and goroutines
// per node. Memory outside the Go heap (mmapped badger files, process
// overhead) is not counted.
func BenchmarkNetIdleMemory(b *testing.B) {
	const n = 8
	var heap, alloc, gor float64
	for b.Loop() {
		before, g0 := settledMem(), runtime.NumGoroutine()
		net := New(b, n, Options{Resources: func(int) string { return bigNode }})
		net.WaitConverged(30 * time.Second)
		time.Sleep(3 * time.Second)
		after, g1 := settledMem(), runtime.NumGoroutine()
		heap = (float64(after.HeapInuse) - float64(before.HeapInuse)) / n
		alloc = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
		gor = float64(g1-g0) / n
		for i := range n {
			net.Kill(i)
		}
	}
	if heap <= 0 {
		b.Fatalf("heap in use per idle node %.0f bytes: the measurement is broken", heap)
	}
	b.ReportMetric(heap, "idle_heap_bytes_per_node")
	b.ReportMetric(alloc, "idle_heap_alloc_bytes_per_node")
	b.ReportMetric(gor, "idle_goroutines_per_node")
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// trustPairs measures the starts-elsewhere cluster open and with an
// authority: both clusters up at once, bursts in pairs, one burst on each
// cluster while the other idles (which goes first alternating), each
// followed by a pause for its background work (record copies, reports)
// to settle. One burst places its tasks in about a tenth of a second, and
// that moves by a factor of two with the machine's noise (other tenants,
// garbage collection); the two bursts of a pair, taken close together,
// see much the same noise, and many pairs average it out. It returns the
// summed results, the process's CPU time over the measured bursts (from
// the first submission, signed before it as on a user's machine, to the
// end of the settling; that includes the idle cluster's background work,
// the same on either side) and each pair's ratio of award rates, trust
// over open, sorted. Clusters are warmed with one burst each first.
func trustPairs(b *testing.B, cfg placementConfig, pairs int) (open, trust placementResult, cpuOpen, cpuTrust time.Duration, ratios []float64) {
	const settle = 100 * time.Millisecond
	runner := func() node.TaskRunner { return &startsElsewhere{} }
	netO := newPlacementNetTrust(b, 4, runner, nil)
	netT := newPlacementNetTrust(b, 4, runner, NewAuthority(b))
	defer func() {
		for _, net := range []*Net{netO, netT} {
			for i := range net.N() {
				net.Stop(i)
			}
		}
	}()
	rng, rngT := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	burst := func(net *Net, r *rand.Rand, res *placementResult, cpu *time.Duration) placementResult {
		x := measurePlacement(b, net, cfg, r)
		time.Sleep(settle)
		if res != nil {
			*cpu += processCPU() - x.cpuAtSubmit
			res.add(x)
		}
		return x
	}
	burst(netO, rng, nil, nil)
	burst(netT, rngT, nil, nil)
	for i := range pairs {
		var o, t placementResult
		if i%2 == 0 {
			o = burst(netO, rng, &open, &cpuOpen)
			t = burst(netT, rngT, &trust, &cpuTrust)
		} else {
			t = burst(netT, rngT, &trust, &cpuTrust)
			o = burst(netO, rng, &open, &cpuOpen)
		}
		ratios = append(ratios, t.AwardsPerSec()/o.AwardsPerSec())
	}
	slices.Sort(ratios)
	return open, trust, cpuOpen, cpuTrust, ratios
}

// geomean is the geometric mean of xs: the mean ratio of paired
// measurements, in which a pair twice as fast one way and a pair twice
// as fast the other cancel.
func geomean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}
