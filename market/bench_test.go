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
	for _, name := range ScorerNames() {
		s := Scorers[name]
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
					m.c.free.Take(k.spec.Request, resource.Allocation{})
					k.running, k.started = true, t0
					m.c.running[k.spec.Key] = k
				} else {
					m.c.enqueue(k)
				}
			}
			m.now = t0
			o := TaskOffer{Key: TaskKey{Job: "x", Task: "y"}, Request: resource.Request{CPU: 2000}, Priority: 5}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = m.makeBid(AuctionID{Key: o.Key}, o)
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
