package sim

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// roomyCluster is tinyCluster with twice its GPU nodes, so that losing a
// node (or a bid) does not leave a tinyWorkload gang too few nodes: the
// market fails a gang for good when a round past its scheduling timeout
// gets fewer bids than it has replicas.
func roomyCluster() *workload.Cluster {
	c := tinyCluster()
	c.Nodes[0].Count = 6
	return c
}

// failingCluster is roomyCluster with every node failing rate times an
// hour, down for repair.
func failingCluster(rate float64, repair time.Duration) *workload.Cluster {
	c := roomyCluster()
	for i := range c.Nodes {
		c.Nodes[i].FailureRate, c.Nodes[i].Repair = rate, repair
	}
	return c
}

// allFinished fails the test unless every job of the run finished.
func allFinished(t *testing.T, in metrics.Input) {
	t.Helper()
	for _, jt := range metrics.Jobs(in) {
		if !jt.Finished {
			t.Fatalf("%s: job %s did not finish", in.Scheduler, jt.ID)
		}
	}
}

// With nodes failing every few hours, every job still finishes under the
// auction and the central baselines, and the lost work is counted. With
// no message loss the auction runs no replica twice: a manager that
// restarts after a peer adopted its jobs leaves them to the adopter.
func TestFailuresEveryJobFinishes(t *testing.T) {
	w := tinyWorkload(t, 4, 40)
	for _, tc := range []struct {
		sched  string
		rate   float64
		repair time.Duration
	}{
		{"auction", 0.05, 10 * time.Minute},
		{"auction", 0.05, 5 * time.Second}, // back before its peers drop it
		{"easy", 0.05, 10 * time.Minute},
		{"least-loaded", 0.05, time.Hour},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.sched, tc.repair), func(t *testing.T) {
			in, err := Simulate(Config{Cluster: failingCluster(tc.rate, tc.repair), Workload: w, Scheduler: tc.sched, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			r := metrics.Compute(in)
			t.Logf("%d failures, %d runs restarted (%.0f task-s lost), %d duplicate runs; mean response %.0f s",
				r.NodeFailures, r.TasksRestarted, r.LostTaskSeconds, r.DuplicateRuns, r.MeanResponse)
			allFinished(t, in)
			if r.NodeFailures == 0 || r.TasksRestarted == 0 || r.LostTaskSeconds <= 0 {
				t.Fatalf("failures cost nothing: %+v", r)
			}
			if r.DuplicateRuns != 0 {
				t.Fatalf("%d duplicate runs without message loss", r.DuplicateRuns)
			}
		})
	}
}

// The failures are drawn per node from the seed: the same seed gives the
// same report with failures and loss on, and the failure times do not
// depend on the scheduler.
func TestFaultsDeterministic(t *testing.T) {
	w := tinyWorkload(t, 5, 30)
	var failures []time.Duration
	for _, sched := range []string{"auction", "easy"} {
		cfg := Config{Cluster: failingCluster(0.05, 10*time.Minute), Workload: w, Scheduler: sched, Seed: 3, Loss: 0.02}
		a, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Run(cfg)
		a.Wall, b.Wall = 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: same seed, different reports:\n%+v\n%+v", sched, a, b)
		}
		if a.NodeFailures == 0 || (sched == "auction" && a.MessagesLost == 0) {
			t.Fatalf("%s: no failures or no loss: %+v", sched, a)
		}
		e := &engine{cfg: cfg.withDefaults()}
		e.nodes = make([]node, cfg.Cluster.Size())
		e.setupFaults(cfg.Cluster.Nodes)
		var first []time.Duration
		for _, ev := range e.q {
			first = append(first, ev.at)
		}
		if failures != nil && fmt.Sprint(first) != fmt.Sprint(failures) {
			t.Fatalf("failure times depend on the scheduler: %v, %v", failures, first)
		}
		failures = first
	}
}

// A run without failures, churn, loss or bandwidth sets up nothing: no
// event, no generator, so its report is what it was before they existed.
func TestNoFaultsNoOverhead(t *testing.T) {
	e := &engine{cfg: Config{}.withDefaults()}
	c := tinyCluster()
	e.nodes = make([]node, c.Size())
	e.setupFaults(c.Nodes)
	if e.faults || e.q.Len() != 0 || e.failRand != nil || e.bw != nil {
		t.Fatalf("faults %v, %d events, generators %v, bandwidth %v", e.faults, e.q.Len(), e.failRand != nil, e.bw)
	}
}

// Lost market messages cost rounds but not jobs: the market's timeouts
// and repeated reports recover, so every job finishes.
func TestLossRecovers(t *testing.T) {
	w := tinyWorkload(t, 6, 40)
	base, err := Run(Config{Cluster: roomyCluster(), Workload: w, Scheduler: "auction", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, loss := range []float64{0.02, 0.05, 0.1} {
		in, err := Simulate(Config{Cluster: roomyCluster(), Workload: w, Scheduler: "auction", Seed: 1, Loss: loss})
		if err != nil {
			t.Fatal(err)
		}
		allFinished(t, in)
		r := metrics.Compute(in)
		t.Logf("loss %.2f: %d of %d messages lost; mean response %.1f s (no loss: %.1f s, %d messages)",
			loss, r.MessagesLost, r.Messages, r.MeanResponse, base.MeanResponse, base.Messages)
		if r.MessagesLost == 0 || (r.Messages <= base.Messages && r.MeanResponse <= base.MeanResponse) {
			t.Fatalf("loss %.2f changed nothing: %+v", loss, r)
		}
	}
}

// shortJobs is n one-task jobs of cpu cores running rt each, submitted
// every gap.
func shortJobs(n int, cpu int64, rt, gap time.Duration) *workload.Workload {
	w := &workload.Workload{Name: "short"}
	for i := range n {
		id := fmt.Sprintf("j%03d", i)
		w.Jobs = append(w.Jobs, workload.Job{
			ID: id, User: "u", Submit: time.Duration(i) * gap,
			Spec: spec.Job{Name: id, Type: "short", Priority: 5, Tasks: []spec.Task{{
				Name: "t", Command: []string{"true"}, Replicas: 1, Estimate: rt,
				Request: resource.Request{CPU: cpu * 1000, Memory: 1 << 30},
			}}},
			Runtimes: map[string]time.Duration{"t": rt},
		})
	}
	return w
}

func cpuNodes(counts ...int) *workload.Cluster {
	c := &workload.Cluster{}
	for i, n := range counts {
		c.Nodes = append(c.Nodes, workload.NodeClass{Count: n, Site: fmt.Sprint("s", i),
			Resources: resource.Vector{CPU: 8000, Memory: 32 << 30, Disk: 1 << 40}})
	}
	return c
}

// A slow link delays every round: each message takes its size over the
// bandwidth, and messages on one link queue behind each other.
func TestBandwidthDelaysRounds(t *testing.T) {
	w := shortJobs(30, 1, 10*time.Second, 200*time.Millisecond)
	var waits []float64
	for _, bw := range []int64{0, 20_000, 2_000} {
		c := cpuNodes(6)
		c.Nodes[0].Bandwidth = bw
		in, err := Simulate(Config{Cluster: c, Workload: w, Scheduler: "auction", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		allFinished(t, in)
		r := metrics.Compute(in)
		t.Logf("bandwidth %d B/s: mean wait %.3f s, %d messages of %d bytes", bw, r.MeanWait, r.Messages, r.Bytes)
		waits = append(waits, r.MeanWait)
	}
	if !(waits[0] < waits[1] && waits[1] < waits[2]) {
		t.Fatalf("mean waits %v do not grow as bandwidth falls", waits)
	}

	e := &engine{bw: []int64{1000, 0, 500}, linkFree: map[uint64]time.Duration{}}
	if d := e.transmit(0, 1, 100); d != 100*time.Millisecond {
		t.Fatalf("100 B at 1000 B/s took %v", d)
	}
	if d := e.transmit(0, 1, 100); d != 200*time.Millisecond {
		t.Fatalf("the second message did not queue behind the first: %v", d)
	}
	if d := e.transmit(0, 2, 100); d != 200*time.Millisecond {
		t.Fatalf("100 B to a 500 B/s node took %v; another link must not queue", d)
	}
	if d := e.transmit(1, 0, 0); d != 0 {
		t.Fatalf("an empty message took %v", d)
	}
}

// starts runs cfg and returns, per node, the times tasks started there.
func starts(t *testing.T, cfg Config) (map[int][]time.Duration, metrics.Input) {
	t.Helper()
	at := map[int][]time.Duration{}
	cfg.onStart = func(node int, _ market.TaskKey, now time.Duration) { at[node] = append(at[node], now) }
	in, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return at, in
}

// Churn: nodes that join later get work only after they joined; nodes
// that leave get none after they left, and what they ran is placed
// elsewhere, so every job still finishes.
func TestChurn(t *testing.T) {
	w := shortJobs(60, 4, 20*time.Minute, 30*time.Second) // twice what two nodes hold
	const join, leave = 30 * time.Minute, 45 * time.Minute
	for _, sched := range []string{"auction", "easy", "round-robin"} {
		t.Run(sched+"/join", func(t *testing.T) {
			c := cpuNodes(2, 2)
			c.Nodes[1].Join = join // nodes 2 and 3
			at, in := starts(t, Config{Cluster: c, Workload: w, Scheduler: sched, Seed: 1})
			allFinished(t, in)
			n := 0
			for _, node := range []int{2, 3} {
				for _, s := range at[node] {
					if s < join {
						t.Fatalf("node %d started a task at %v, before it joined at %v", node, s, join)
					}
					n++
				}
			}
			t.Logf("%d of %d runs on the nodes that joined at %v", n, len(at[0])+len(at[1])+n, join)
			if n == 0 {
				t.Fatal("the nodes that joined got no work")
			}
		})
		t.Run(sched+"/leave", func(t *testing.T) {
			c := cpuNodes(2, 2)
			c.Nodes[1].Leave = leave
			at, in := starts(t, Config{Cluster: c, Workload: w, Scheduler: sched, Seed: 1})
			allFinished(t, in)
			before := 0
			for _, node := range []int{2, 3} {
				for _, s := range at[node] {
					if s >= leave {
						t.Fatalf("node %d started a task at %v, after it left at %v", node, s, leave)
					}
					before++
				}
			}
			r := metrics.Compute(in)
			t.Logf("%d runs on the leaving nodes; %d cut short by the leave", before, r.TasksRestarted)
			if before == 0 || r.TasksRestarted == 0 {
				t.Fatalf("the leaving nodes ran %d tasks and lost %d", before, r.TasksRestarted)
			}
		})
	}
}

// A failed node gets no work while it is down: every run on it started
// while it was up.
func TestNoWorkWhileDown(t *testing.T) {
	w := shortJobs(80, 2, 30*time.Minute, time.Minute)
	for _, sched := range []string{"auction", "easy"} {
		t.Run(sched, func(t *testing.T) {
			c := cpuNodes(4)
			c.Nodes[0].FailureRate, c.Nodes[0].Repair = 0.5, 20*time.Minute
			cfg := Config{Cluster: c, Workload: w, Scheduler: sched, Seed: 2}
			at, in := starts(t, cfg)
			allFinished(t, in)
			r := metrics.Compute(in)
			if r.NodeFailures == 0 {
				t.Fatal("no failures")
			}
			// Replay each node's failures from its generator: each
			// failure comes a drawn gap after the node was last up.
			for i := range c.Size() {
				g := failSeed(cfg.Seed, i)
				up := time.Duration(0)
				for k := 0; k < 20; k++ {
					fail := up + failGap(&g, 0.5)
					for _, s := range at[i] {
						if s > fail && s < fail+20*time.Minute {
							t.Fatalf("node %d started a task at %v while down from %v", i, s, fail)
						}
					}
					up = fail + 20*time.Minute
				}
			}
		})
	}
}
