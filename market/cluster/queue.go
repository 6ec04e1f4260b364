package cluster

import (
	"container/heap"
	"time"

	"github.com/agora-sched/agora/market"
)

// Queue is a Clock of its own, for a caller without a time line of its
// own (the scripted tests): RunUntil hands the events due to the cluster
// in order.
type Queue struct {
	now time.Duration
	seq uint64
	q   queued
}

// NewQueue returns an empty queue at time zero.
func NewQueue() *Queue { return &Queue{} }

// Now implements Clock.
func (q *Queue) Now() time.Duration { return q.now }

// Schedule implements Clock.
func (q *Queue) Schedule(at time.Duration, ev Event) {
	q.seq++
	heap.Push(&q.q, queuedEvent{at: max(at, q.now), seq: q.seq, ev: ev})
}

// Len is the number of events queued.
func (q *Queue) Len() int { return len(q.q) }

// RunUntil hands c every event due up to until, in order, and leaves the
// clock at until.
func (q *Queue) RunUntil(c *Cluster, until time.Duration) {
	for len(q.q) > 0 && q.q[0].at <= until {
		e := heap.Pop(&q.q).(queuedEvent)
		q.now = e.at
		c.Handle(e.ev)
	}
	q.now = max(q.now, until)
}

type queuedEvent struct {
	at  time.Duration
	seq uint64
	ev  Event
}

type queued []queuedEvent

func (h queued) Len() int { return len(h) }
func (h queued) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h queued) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *queued) Push(x any)   { *h = append(*h, x.(queuedEvent)) }
func (h *queued) Pop() any     { o := *h; e := o[len(o)-1]; *h = o[:len(o)-1]; return e }

// latency is a Network that delivers every message after d.
type latency time.Duration

// Send implements Network.
func (l latency) Send(_, _ int, _ market.Msg) (time.Duration, bool) {
	return time.Duration(l), true
}

// Link implements Network.
func (l latency) Link(_, _ int) (time.Duration, bool) { return time.Duration(l), true }

// NoObserver observes nothing.
type NoObserver struct{}

// Effects implements Observer.
func (NoObserver) Effects(int, []market.Effect) {}

// Started implements Observer.
func (NoObserver) Started(int, market.TaskSpec) {}

// Ended implements Observer.
func (NoObserver) Ended(int, market.TaskKey, *Run, int, bool) {}

// Saved implements Observer.
func (NoObserver) Saved(int, market.JobRecord) {}

// Left implements Observer.
func (NoObserver) Left(int) {}
