package testnet

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// Placement benchmark: how long a trivial task takes from the submit call
// to its start on some node, and how many placements a small testnet makes
// per second, next to the bare HTTP round trip of the same API as a
// baseline. Capacity never limits (every node declares 64 CPUs), so the
// figures are those of the auction, the wire and the event loops.
//
//	go test -run '^$' -bench Placement -benchtime 1x ./testnet/

// bigNode is every benchmark node's --resources: far more than the tasks
// ask for, so that nothing waits for capacity.
const bigNode = "cpu: 64\nmemory: 256GiB\ngpus: []\n"

// placementConfig shapes one measured round.
type placementConfig struct {
	Jobs       int           // jobs submitted at once, each to a random node
	Tasks      int           // trivial tasks (true, 100m CPU) per job
	APISamples int           // GET /v1/id round trips for the baseline
	Timeout    time.Duration // patience for every job to finish
	// Poll is how often the jobs' status is asked for while waiting
	// (0: waitfor.Poll). Each ask is an API call per unfinished job
	// that runs on its manager's event loop and encodes the job's status:
	// the harness's own load on the machine it measures.
	Poll time.Duration
}

// placementResult is what one or more rounds measured.
type placementResult struct {
	Tasks      int             // tasks submitted
	Placed     int             // tasks that reached running or succeeded
	Succeeded  int             // tasks that succeeded
	Latency    []time.Duration // submit call → task started, per placed task
	Span       time.Duration   // first submit call → last task started, summed over rounds
	APIRTT     []time.Duration // GET /v1/id round trips
	Missing    int             // placed tasks without a start time anywhere
	ProcStarts int             // placed tasks timed by their process start (the rest by the manager's record)
	Awarded    int             // placed tasks whose accepted award the manager's events show
	AwardSpan  time.Duration   // first submit call → last accepted award, summed over rounds
	AwardAt    []time.Duration // first submit call → each accepted award
	// cpuAtSubmit is the process's CPU time just before the submissions
	// (after they were prepared and signed).
	cpuAtSubmit time.Duration
}

func (r *placementResult) add(o placementResult) {
	r.Tasks += o.Tasks
	r.Placed += o.Placed
	r.Succeeded += o.Succeeded
	r.Latency = append(r.Latency, o.Latency...)
	r.Span += o.Span
	r.APIRTT = append(r.APIRTT, o.APIRTT...)
	r.Missing += o.Missing
	r.ProcStarts += o.ProcStarts
	r.Awarded += o.Awarded
	r.AwardSpan += o.AwardSpan
}

// AwardsPerSec is the rate of scheduling decisions: placed tasks whose
// executor accepted the award, over the summed first-submit → last-award
// spans. It leaves out what follows the decision (the executor's fork and
// exec of the process), which PlacementsPerSec includes.
func (r placementResult) AwardsPerSec() float64 {
	if r.AwardSpan <= 0 {
		return 0
	}
	return float64(r.Awarded) / r.AwardSpan.Seconds()
}

// PlacementsPerSec is placed tasks over the summed first-submit →
// last-start spans.
func (r placementResult) PlacementsPerSec() float64 {
	if r.Span <= 0 {
		return 0
	}
	return float64(r.Placed) / r.Span.Seconds()
}

// quantile returns the q-quantile (nearest rank) of ds in milliseconds.
func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	i = min(max(i, 0), len(s)-1)
	return float64(s[i]) / float64(time.Millisecond)
}

// trivialJob is a job of n tasks that each run true on a tenth of a CPU.
func trivialJob(name string, n int) string {
	tasks := make([]string, n)
	for i := range tasks {
		tasks[i] = fmt.Sprintf(`{"name": "t%03d", "command": ["true"], "resources": {"cpu": "100m"}}`, i)
	}
	return `{"name": "` + name + `", "tasks": [` + strings.Join(tasks, ",") + `]}`
}

// newPlacementNet starts the benchmark's testnet and waits for it to
// converge. With runner nil its nodes start real processes; else each
// node runs its tasks with the runner runner returns.
func newPlacementNet(tb testing.TB, n int, runner func() node.TaskRunner) *Net {
	return newPlacementNetTrust(tb, n, runner, nil)
}

// newPlacementNetTrust is newPlacementNet with every node admitted by au
// (none when nil) and signing its API requests as an admin of it.
func newPlacementNetTrust(tb testing.TB, n int, runner func() node.TaskRunner, au *Authority) *Net {
	tb.Helper()
	opts := Options{Resources: func(int) string { return bigNode }}
	opts.Configure = func(_ int, c *node.Config) {
		if runner != nil {
			c.Runner = runner()
		}
		if au != nil {
			au.Admit(c, "bench")
		}
	}
	net := New(tb, n, opts)
	if au != nil {
		admin := au.User("bench", true, auth.NoQuota)
		for _, nd := range net.Up() {
			nd.SetCredential(&admin)
		}
	}
	net.WaitConverged(15 * time.Second)
	return net
}

// startsElsewhere is the executor of the placement benchmark's second
// cluster: a node.TaskRunner that reports each task started and exited 0
// at once, without a process. A central scheduler's placement rate counts
// a task placed when it is assigned to a node, apart from its start on
// that node: Nomad's C1M figure, 3,750 per second, is five servers
// assigning containers to 5,000 client hosts that start them (C2M plots
// "scheduled" and "running" as two lines). Here every executor shares
// the machine's 2 cores with every manager, so the first cluster's rate
// includes each task's fork and exec; this one times the same market,
// wire, store and event loops with the starts kept off the machine.
// Everything after the start still happens: the exit report, the
// manager's records and their replication.
type startsElsewhere struct {
	wg      sync.WaitGroup
	started atomic.Int64
}

func (r *startsElsewhere) Start(_ string, _ runtime.Spec, _ runtime.LogSink, done func(runtime.Result)) error {
	r.started.Add(1)
	r.wg.Go(func() {
		now := time.Now()
		done(runtime.Result{Started: now, Finished: now})
	})
	return nil
}

func (*startsElsewhere) Stop(string, string) bool { return false }
func (*startsElsewhere) Kill(string) bool         { return false }
func (*startsElsewhere) Running() []string        { return nil }
func (*startsElsewhere) StopAll(string)           {}

func (r *startsElsewhere) Wait(ctx context.Context) error {
	idle := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apiRTT times samples GET /v1/id round trips, each to a random node.
func apiRTT(tb testing.TB, nodes []*Node, samples int, rng *rand.Rand) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, 0, samples)
	for range samples {
		nd := nodes[rng.IntN(len(nodes))]
		t0 := time.Now()
		code, _, err := nd.API("GET", "/v1/id", nil)
		d := time.Since(t0)
		if err != nil || code != 200 {
			tb.Fatalf("GET /v1/id on node %d: %d %v", nd.Index, code, err)
		}
		out = append(out, d)
	}
	return out
}

// parseEvent splits a manager event line into its time and text.
func parseEvent(line string) (time.Time, string, bool) {
	ts, text, ok := strings.Cut(line, " ")
	if !ok {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	return at, text, err == nil
}

// measurePlacement runs one round: a baseline of API round trips, then
// cfg.Jobs jobs of cfg.Tasks trivial tasks submitted at once, each to a
// random node, waited for until they end.
func measurePlacement(tb testing.TB, net *Net, cfg placementConfig, rng *rand.Rand) placementResult {
	tb.Helper()
	nodes := net.Up()
	var res placementResult
	// Warm the client's connections to every node, then the baseline.
	for _, nd := range nodes {
		if _, _, err := nd.API("GET", "/v1/id", nil); err != nil {
			tb.Fatalf("warm up node %d: %v", nd.Index, err)
		}
	}
	res.APIRTT = apiRTT(tb, nodes, cfg.APISamples, rng)

	type sub struct {
		nd  *Node
		at  time.Time // when Submit was called
		id  string
		err error
	}
	subs := make([]sub, cfg.Jobs)
	// Submissions are prepared, and in a network with an authority
	// signed, before the clock starts: a user's client signs on the
	// user's machine, not the cluster's.
	prepared := make([]api.Signed, cfg.Jobs)
	for i := range subs {
		subs[i].nd = nodes[rng.IntN(len(nodes))]
		var err error
		if prepared[i], err = subs[i].nd.Signed(trivialJob(fmt.Sprintf("bench-%d", i), cfg.Tasks)); err != nil {
			tb.Fatal(err)
		}
		// And the token that asks for its status, which the wait below
		// sends while the cluster is still placing.
		if prepared[i].ContentType == api.TicketType {
			t, err := auth.DecodeTicket(prepared[i].Body)
			if err == nil {
				err = subs[i].nd.SignStatus(t.JobID())
			}
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
	res.cpuAtSubmit = processCPU()
	var wg sync.WaitGroup
	for i := range subs {
		wg.Go(func() {
			subs[i].at = time.Now()
			subs[i].id, subs[i].err = subs[i].nd.SubmitSigned(prepared[i])
		})
	}
	wg.Wait()
	first := subs[0].at
	for _, s := range subs {
		if s.err != nil {
			tb.Fatalf("submit to node %d: %v", s.nd.Index, s.err)
		}
		if s.at.Before(first) {
			first = s.at
		}
	}

	// Wait for every job on its manager, the node it was submitted to.
	final := make([]api.JobStatus, len(subs))
	poll := cfg.Poll
	if poll <= 0 {
		poll = waitfor.Poll
	}
	waitfor.Every(tb, cfg.Timeout, poll, fmt.Sprintf("%d jobs of %d tasks to finish", cfg.Jobs, cfg.Tasks), func() bool {
		for i, s := range subs {
			if st := final[i].State; st == "succeeded" || st == "failed" || st == "cancelled" {
				continue
			}
			js, err := s.nd.Status(s.id)
			if err != nil {
				return false
			}
			final[i] = js
			if st := js.State; st != "succeeded" && st != "failed" && st != "cancelled" {
				return false
			}
		}
		return true
	})

	var last, lastAward time.Time
	var awardAt []time.Time
	for i, s := range subs {
		// A task counts as placed when the runtime started its process:
		// the executor's record of the successful attempt gives that
		// time; the manager's record (its status, else its events: the
		// time the executor reported it running, which is before the
		// process start) stands in only where no executor has one.
		procStart := map[string]time.Time{}
		for _, nd := range nodes {
			for k, at := range nd.TaskStarts(s.id) {
				if at.After(procStart[k]) {
					procStart[k] = at
				}
			}
		}
		running := map[string]time.Time{}
		awarded := map[string]time.Time{} // the last accepted award of each replica
		for _, line := range s.nd.Events(s.id) {
			at, text, ok := parseEvent(line)
			if !ok {
				continue
			}
			key, rest, ok := strings.Cut(text, ": ")
			if !ok {
				continue
			}
			if strings.HasPrefix(rest, "running on ") {
				running[key] = at
			}
			if strings.HasPrefix(rest, "awarded to ") {
				awarded[key] = at
			}
		}
		for _, tk := range final[i].Tasks {
			res.Tasks++
			key := fmt.Sprintf("%s/%s/%d", s.id, tk.Name, tk.Replica)
			if tk.State == "succeeded" {
				res.Succeeded++
			}
			if tk.State != "running" && tk.State != "succeeded" {
				continue
			}
			res.Placed++
			if at, ok := awarded[key]; ok {
				res.Awarded++
				awardAt = append(awardAt, at)
				if at.After(lastAward) {
					lastAward = at
				}
			}
			started, err := time.Parse(time.RFC3339Nano, tk.Started)
			if at, ok := procStart[fmt.Sprintf("%s/%d", tk.Name, tk.Replica)]; ok && tk.State == "succeeded" {
				started, err = at, nil
				res.ProcStarts++
			}
			if err != nil {
				var ok bool
				if started, ok = running[key]; !ok {
					res.Missing++
					continue
				}
			}
			res.Latency = append(res.Latency, started.Sub(s.at))
			if started.After(last) {
				last = started
			}
		}
	}
	if !last.IsZero() {
		res.Span = last.Sub(first)
	}
	if !lastAward.IsZero() {
		res.AwardSpan = lastAward.Sub(first)
	}
	for _, at := range awardAt {
		res.AwardAt = append(res.AwardAt, at.Sub(first))
	}
	return res
}

// spawnCeiling is the placement benchmark's baseline, run in the same
// process: the bare cost of what an executor must do at the least to start
// one of the benchmark's tasks — create its work directory, fork and exec
// true with its output piped and drained, and reap it — with no scheduler,
// network or store. workers goroutines (one per node, as each node starts
// its tasks on one goroutine) start n processes between them; it returns
// processes started per second, first Start call → last Start return.
func spawnCeiling(tb testing.TB, n, workers int) float64 {
	tb.Helper()
	dir := tb.TempDir()
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var (
		mu     sync.Mutex
		last   time.Time
		failed error
		reaped sync.WaitGroup
		wg     sync.WaitGroup
	)
	first := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := range next {
				work := filepath.Join(dir, "tasks", fmt.Sprintf("w%d", w), fmt.Sprintf("t%04d.0", i), "work")
				err := os.MkdirAll(work, 0o755)
				var cmd *exec.Cmd
				if err == nil {
					cmd = exec.Command("true")
					cmd.Dir, cmd.Stdout, cmd.Stderr = work, io.Discard, io.Discard
					cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
					err = cmd.Start()
				}
				at := time.Now()
				mu.Lock()
				if err != nil && failed == nil {
					failed = err
				}
				if at.After(last) {
					last = at
				}
				mu.Unlock()
				if err == nil {
					reaped.Go(func() { _ = cmd.Wait() })
				}
			}
		})
	}
	wg.Wait()
	reaped.Wait()
	if failed != nil {
		tb.Fatalf("spawn baseline: %v", failed)
	}
	return float64(n) / last.Sub(first).Seconds()
}

// BenchmarkPlacement: 4 nodes; every iteration submits 5 jobs × 20 trivial
// tasks at once to random nodes and reports submit-to-start percentiles,
// placements per second and the ratio to the API's bare round trip.
func BenchmarkPlacement(b *testing.B) {
	total, _ := benchPlacements(b, newPlacementNet(b, 4, nil), placementConfig{Jobs: 5, Tasks: 20, APISamples: 200, Timeout: 2 * time.Minute}, 1, 2)
	if total.Placed < total.Tasks || total.Missing > 0 {
		b.Errorf("placed %d of %d tasks (%d without a start time)", total.Placed, total.Tasks, total.Missing)
	}
	p50, p99 := quantile(total.Latency, 0.50), quantile(total.Latency, 0.99)
	api50, api99 := quantile(total.APIRTT, 0.50), quantile(total.APIRTT, 0.99)
	b.ReportMetric(p50, "p50-submit-to-start-ms")
	b.ReportMetric(p99, "p99-submit-to-start-ms")
	b.ReportMetric(total.PlacementsPerSec(), "placements/s")
	b.ReportMetric(api50, "p50-api-rtt-ms")
	b.ReportMetric(api99, "p99-api-rtt-ms")
	if api50 > 0 {
		b.ReportMetric(p50/api50, "p50-ratio-vs-api-rtt")
	}
	b.Logf("%d tasks, %d placed, %d succeeded; span %v", total.Tasks, total.Placed, total.Succeeded, total.Span.Round(time.Millisecond))
}

// benchPlacements sums measurePlacement on net over the benchmark's
// iterations, with job placement drawn from seed (s1, s2), and returns
// the sum and the number of iterations.
func benchPlacements(b *testing.B, net *Net, cfg placementConfig, s1, s2 uint64) (placementResult, int) {
	rng := rand.New(rand.NewPCG(s1, s2))
	var total placementResult
	iters := 0
	for b.Loop() {
		total.add(measurePlacement(b, net, cfg, rng))
		iters++
	}
	return total, iters
}

// TestPlacementBenchSmoke runs the benchmark's measurement once, small,
// and checks only that its figures are sane.
func TestPlacementBenchSmoke(t *testing.T) {
	net := newPlacementNet(t, 4, nil)
	cfg := placementConfig{Jobs: 1, Tasks: 5, APISamples: 20, Timeout: 30 * time.Second}
	r := measurePlacement(t, net, cfg, rand.New(rand.NewPCG(1, 2)))
	if r.Tasks != 5 || r.Succeeded != 5 || r.Placed != 5 {
		t.Fatalf("tasks %d, placed %d, succeeded %d; want 5 each", r.Tasks, r.Placed, r.Succeeded)
	}
	if len(r.Latency) != 5 || r.Missing != 0 {
		t.Fatalf("%d start latencies, %d placed tasks without a start time", len(r.Latency), r.Missing)
	}
	for _, d := range r.Latency {
		if d <= 0 {
			t.Fatalf("submit-to-start latency %v is not positive: %v", d, r.Latency)
		}
	}
	if len(r.APIRTT) != cfg.APISamples || quantile(r.APIRTT, 0.5) <= 0 {
		t.Fatalf("API round trips: %v", r.APIRTT)
	}
	if r.Span <= 0 || r.PlacementsPerSec() <= 0 {
		t.Fatalf("span %v, %.1f placements/s", r.Span, r.PlacementsPerSec())
	}
	// Every replica ran, so each has an accepted award. (The award span
	// is not bounded by the start span: a remote executor may start the
	// process before its acceptance reaches the manager.)
	if r.Awarded != 5 || r.AwardSpan <= 0 {
		t.Fatalf("%d replicas with an accepted award, award span %v", r.Awarded, r.AwardSpan)
	}
	ceiling := spawnCeiling(t, 20, 4)
	if ceiling <= 0 || math.IsInf(ceiling, 0) {
		t.Fatalf("spawn ceiling %.1f/s", ceiling)
	}
	t.Logf("p50 %.1f ms, p99 %.1f ms submit-to-start; %.1f placements/s, %.1f awards/s, bare spawns %.1f/s; API round trip p50 %.2f ms",
		quantile(r.Latency, 0.5), quantile(r.Latency, 0.99), r.PlacementsPerSec(), r.AwardsPerSec(), ceiling, quantile(r.APIRTT, 0.5))
}

// TestPlacementStartsElsewhereSmoke runs the placement measurement once,
// small, on nodes whose tasks run through Config.Runner (the benchmark's
// startsElsewhere): every task is awarded, reported started and succeeds,
// through the runners given, not as a process.
func TestPlacementStartsElsewhereSmoke(t *testing.T) {
	var runners []*startsElsewhere
	var mu sync.Mutex
	net := newPlacementNet(t, 4, func() node.TaskRunner {
		r := &startsElsewhere{}
		mu.Lock()
		runners = append(runners, r)
		mu.Unlock()
		return r
	})
	cfg := placementConfig{Jobs: 2, Tasks: 5, APISamples: 5, Timeout: 30 * time.Second}
	r := measurePlacement(t, net, cfg, rand.New(rand.NewPCG(1, 2)))
	if r.Tasks != 10 || r.Succeeded != 10 || r.Placed != 10 || r.Awarded != 10 || r.Missing != 0 {
		t.Fatalf("tasks %d, placed %d, succeeded %d, awarded %d, without a start %d; want 10, 10, 10, 10, 0",
			r.Tasks, r.Placed, r.Succeeded, r.Awarded, r.Missing)
	}
	if r.AwardsPerSec() <= 0 || r.PlacementsPerSec() <= 0 {
		t.Fatalf("%.1f awards/s, %.1f placements/s", r.AwardsPerSec(), r.PlacementsPerSec())
	}
	started := 0
	mu.Lock()
	for _, rn := range runners {
		started += int(rn.started.Load())
	}
	mu.Unlock()
	if len(runners) != 4 || started != 10 {
		t.Fatalf("%d runners started %d tasks; want 4 runners, 10 tasks", len(runners), started)
	}
}
