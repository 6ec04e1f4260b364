package market

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// BenchmarkScore measures one bid score per scorer.
func BenchmarkScore(b *testing.B) {
	capv := gpuNode(32, 4, 80<<30, "H100")
	free := capv.Clone()
	free.CPU = 12000
	now := t0
	in := ScoreInput{Now: now, Offer: TaskOffer{Request: resource.Request{CPU: 4000, Memory: 8 << 30, GPU: resource.GPURequest{Count: 1}}, Estimate: time.Minute},
		Capacity: capv, Free: free, Start: now.Add(time.Second), Finish: now.Add(time.Minute), Runtime: 50 * time.Second, SuccessRate: 0.9, Weights: DefaultWeights}
	reg := DefaultScorers()
	for _, name := range reg.Names() {
		s := reg[name]
		b.Run(name, func(b *testing.B) {
			var sink float64
			for i := 0; i < b.N; i++ {
				sink += s.Score(in)
			}
			_ = sink
		})
	}
}

// BenchmarkBid measures a contractor computing a bid (schedule simulation
// included) with a given number of running and queued tasks.
func BenchmarkBid(b *testing.B) {
	for _, load := range []int{0, 16, 128} {
		b.Run(fmt.Sprintf("tasks=%d", load), func(b *testing.B) {
			m, err := New(Config{Self: "n0", Capacity: cpuNode(64)})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < load; i++ {
				k := &contract{spec: TaskSpec{TaskOffer: TaskOffer{Key: TaskKey{Job: "j", Task: fmt.Sprint(i)}, Request: resource.Request{CPU: 1000}}}, runtime: time.Duration(i+1) * time.Second}
				if i < 64 {
					m.con.free.Take(k.spec.Request, resource.Allocation{})
					k.running, k.started = true, t0
					m.con.running[k.spec.Key] = k
				} else {
					m.con.enqueue(k)
				}
			}
			m.now = t0
			o := TaskOffer{Key: TaskKey{Job: "x", Task: "y"}, Request: resource.Request{CPU: 2000}, Priority: 5}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = m.con.makeBid(AuctionID{Key: o.Key}, o)
			}
		})
	}
}

// BenchmarkAuctionRound measures whole auction rounds — CFP to d
// candidates, bids, award, accept — among simulated nodes with the real
// core and zero network latency: the core's own cost per placement.
func BenchmarkAuctionRound(b *testing.B) {
	for _, nodes := range []int{10, 100} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			caps := make([]resource.Vector, nodes)
			for i := range caps {
				caps[i] = cpuNode(64)
			}
			c := newCluster(&testing.T{}, caps...)
			c.latency = 0
			c.advertEvery = 100 * time.Millisecond
			c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, time.Millisecond }
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("j%d", i)
				if err := c.nodes[i%nodes].Submit(c.now, id, spec.Job{Name: "b", Type: "b", Priority: 5, Tasks: []spec.Task{task("t", 1000)}}); err != nil {
					b.Fatal(err)
				}
				m := c.nodes[i%nodes]
				for j, _ := m.Job(id); j.Tasks[0].State == TaskPending; j, _ = m.Job(id) {
					c.step()
				}
			}
		})
	}
}

// runTurns places and runs jobs (each of tasks one-CPU tasks that end as
// soon as they start) between two markets that see each other, driven as
// the node drives its market: per loop turn (a virtual millisecond), every
// message and task exit queued for a node, every tenth turn a Tick, then
// one Ready. It returns the number of market calls made.
func runTurns(tb testing.TB, jobs, tasks int) int {
	var nodes [2]*Market
	ids := [2]NodeID{"n0", "n1"}
	for i := range nodes {
		m, err := New(Config{Self: ids[i], Capacity: cpuNode(2 * jobs * tasks), Seed: int64(i)})
		if err != nil {
			tb.Fatal(err)
		}
		nodes[i] = m
	}
	now := t0
	for i, m := range nodes {
		o := nodes[1-i]
		m.Advert(now, Peer{ID: ids[1-i], Capacity: o.Capacity(), Free: o.Free()})
	}
	type msg struct {
		from NodeID
		m    Msg
	}
	type exit struct {
		k     TaskKey
		epoch uint64
	}
	var inbox [2][]msg
	var exits [2][]exit
	ts := make([]spec.Task, tasks)
	for i := range ts {
		ts[i] = task(fmt.Sprintf("t%04d", i), 1000)
	}
	for j := range jobs {
		if err := nodes[0].Submit(now, fmt.Sprintf("j%d", j), job("big", ts...)); err != nil {
			tb.Fatal(err)
		}
	}
	calls, turns := 0, 0
	finished := func() bool {
		c := nodes[0].JobCounts()
		return c[JobSucceeded] == jobs
	}
	for ; !finished(); turns++ {
		if turns > 100_000 {
			tb.Fatal("jobs did not finish")
		}
		for i, m := range nodes {
			in, ex := inbox[i], exits[i]
			inbox[i], exits[i] = nil, nil
			for _, d := range in {
				m.Step(now, d.from, d.m)
			}
			for _, e := range ex {
				m.TaskExited(now, e.k, e.epoch, 0, "exit status 0", nil)
			}
			calls += len(in) + len(ex)
			if turns%10 == 0 { // the node ticks every 10 ms
				m.Tick(now)
				calls++
			}
			for _, e := range m.Ready() {
				switch x := e.(type) {
				case Send:
					inbox[1-i] = append(inbox[1-i], msg{ids[i], x.Msg})
				case Broadcast:
					inbox[1-i] = append(inbox[1-i], msg{ids[i], x.Msg})
				case StartTask:
					exits[i] = append(exits[i], exit{x.Task.Key, x.Task.Epoch})
				}
			}
		}
		now = now.Add(time.Millisecond)
	}
	return calls
}

// BenchmarkJobSize measures the core's cost per task of placing and
// running one 1,000-task job against that of 100 ten-task jobs, driven a
// loop turn at a time as the node does (runTurns). large_over_small is
// their ratio: near 1 when a job's bookkeeping per message does not grow
// with its size. (Before job records were copied once per Ready rather
// than once per call, every task report copied the whole record.)
func BenchmarkJobSize(b *testing.B) {
	var small, large time.Duration
	for b.Loop() {
		t := time.Now()
		runTurns(b, 100, 10)
		small += time.Since(t)
		t = time.Now()
		runTurns(b, 1, 1000)
		large += time.Since(t)
	}
	n := float64(b.N) * 1000
	b.ReportMetric(float64(small.Nanoseconds())/n, "ns_per_task_small_jobs")
	b.ReportMetric(float64(large.Nanoseconds())/n, "ns_per_task_large_job")
	b.ReportMetric(float64(large)/float64(small), "large_over_small")
}

// TestRunTurns checks the driver BenchmarkJobSize uses: every job
// finishes, with every task run once.
func TestRunTurns(t *testing.T) {
	if calls := runTurns(t, 3, 20); calls < 3*20*3 {
		t.Fatalf("%d market calls for 60 tasks", calls)
	}
}
