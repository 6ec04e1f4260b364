package gossip

import (
	"fmt"
	"time"

	"github.com/agora-sched/agora/gossip/pb"
)

// StealOffer is what an advert says the node's queue could give a thief
// (market.StealOffer): Known is false when the sender does not say.
type StealOffer struct {
	Known       bool
	Count       int
	CPU, Memory int64
	GPUs        int
	Runtime     time.Duration
}

// maxStealRuntime bounds an offer's runtime: far beyond any task's.
const maxStealRuntime = 100 * 365 * 24 * time.Hour

func stealToPB(s StealOffer) *pb.StealOffer {
	if !s.Known {
		return nil
	}
	return &pb.StealOffer{Count: uint32(max(s.Count, 0)), CpuMilli: s.CPU, Memory: s.Memory, Gpus: uint32(max(s.GPUs, 0)),
		RuntimeMs: s.Runtime.Milliseconds()}
}

// stealFromPB checks an advert's offer against its own queue.
func stealFromPB(m *pb.StealOffer, queue uint32) (StealOffer, error) {
	switch {
	case m == nil:
		return StealOffer{}, nil
	case m.Count > queue:
		return StealOffer{}, fmt.Errorf("gossip: advert steal.count %d over its queue %d", m.Count, queue)
	case m.CpuMilli < 0 || m.CpuMilli > maxRequestCPU:
		return StealOffer{}, fmt.Errorf("gossip: advert steal.cpu_milli %d outside 0..%d", m.CpuMilli, maxRequestCPU)
	case m.Memory < 0 || m.Memory > maxRequestBytes:
		return StealOffer{}, fmt.Errorf("gossip: advert steal.memory %d outside 0..%d", m.Memory, maxRequestBytes)
	case m.Gpus > maxRequestGPUs:
		return StealOffer{}, fmt.Errorf("gossip: advert steal.gpus %d over %d", m.Gpus, maxRequestGPUs)
	case m.RuntimeMs < 0 || m.RuntimeMs > maxStealRuntime.Milliseconds():
		return StealOffer{}, fmt.Errorf("gossip: advert steal.runtime_ms %d outside 0..%d", m.RuntimeMs, maxStealRuntime.Milliseconds())
	}
	return StealOffer{Known: true, Count: int(m.Count), CPU: m.CpuMilli, Memory: m.Memory, GPUs: int(m.Gpus),
		Runtime: time.Duration(m.RuntimeMs) * time.Millisecond}, nil
}
