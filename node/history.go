package node

import (
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/web"
)

// History implements web.Source: the day of samples the dashboard's
// charts draw.
func (n *Node) History() *web.History { return &n.history }

// historyLoop samples the charts' series every web.HistoryStep, the
// first at once.
func (n *Node) historyLoop() {
	t := time.NewTicker(web.HistoryStep)
	defer t.Stop()
	for now := time.Now(); ; {
		s := web.Sample{At: now, FreeCPU: float64(n.soft.Load().Free.CPU) / 1000, Queued: float64(n.soft.Load().Queue)}
		if n.gossip != nil {
			s.Peers = float64(len(n.gossip.Members()))
		}
		var counts map[market.JobState]int
		if n.call(func() { counts = n.mkt.JobCounts() }) == nil {
			s.Running = float64(counts[market.JobRunning])
		}
		n.history.Add(s)
		select {
		case <-n.ctx.Done():
			return
		case now = <-t.C:
		}
	}
}

// RunningHere implements web.Source.
func (n *Node) RunningHere() (running, queued []market.TaskKey) {
	_ = n.call(func() { running, queued = n.mkt.Running(), n.mkt.Queued() })
	return running, queued
}
