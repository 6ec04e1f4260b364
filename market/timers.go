package market

import (
	"cmp"
	"container/heap"
	"slices"
	"strings"
	"time"
)

// The deadline queue. Every time at which Tick has work is a timer in
// one min-heap, keyed by what it is for: a single replica's auction (its
// bid window, award answer or back-off), a gang auction, a job (its
// pending replicas' back-offs and its placed replicas' leases), or one
// item of the node's upkeep (copies, searches, reclaim, heartbeats,
// repeated reports, holds, stealing, retention). NextTick reads the
// earliest; Tick pops the due ones.
//
// A timer is never set by hand next to the state it mirrors. Code that
// may change an auction, a gang or a job marks it (retime*); at the end
// of the call (leave), and between Tick's phases, each marked one's
// timer is computed again from its state by the one function that also
// decides whether it is due (auctionDue, gangDue, jobDeadline). The
// upkeep's timers are computed the same way from each item's own next
// function, listed beside the function Tick runs (upkeep.go).

// timerKind says what a timer is for.
type timerKind uint8

const (
	timerAuction timerKind = iota // key: the replica
	timerGang                     // key: the gang ("job/task")
	timerJob                      // key: the job
)

// timerKey names a timer: one per thing it is for.
type timerKey struct {
	kind timerKind
	task TaskKey // timerAuction
	id   string  // timerGang, timerJob
}

func (k timerKey) compare(o timerKey) int {
	if k.kind != o.kind {
		return int(k.kind) - int(o.kind)
	}
	if c := k.task.Compare(o.task); c != 0 {
		return c
	}
	return strings.Compare(k.id, o.id)
}

type timer struct {
	at    time.Time
	key   timerKey
	index int
}

// timers is the deadline queue: a min-heap by time, ties broken by key so
// that the order never depends on the order timers were set in, with an
// index to move or stop a timer by its key.
type timers struct {
	h     timerHeap
	byKey map[timerKey]*timer
}

// set makes k's timer fire at at, adding or moving it.
func (q *timers) set(k timerKey, at time.Time) {
	if q.byKey == nil {
		q.byKey = map[timerKey]*timer{}
	}
	if t := q.byKey[k]; t != nil {
		if !t.at.Equal(at) {
			t.at = at
			heap.Fix(&q.h, t.index)
		}
		return
	}
	t := &timer{at: at, key: k}
	q.byKey[k] = t
	heap.Push(&q.h, t)
}

// stop removes k's timer, if it is set.
func (q *timers) stop(k timerKey) {
	if t := q.byKey[k]; t != nil {
		heap.Remove(&q.h, t.index)
		delete(q.byKey, k)
	}
}

// next is the earliest timer's time; false when none is set.
func (q *timers) next() (time.Time, bool) {
	if len(q.h) == 0 {
		return time.Time{}, false
	}
	return q.h[0].at, true
}

// popDue removes every timer due at now (at or before it), earliest
// first, and hands each key to fn.
func (q *timers) popDue(now time.Time, fn func(timerKey)) {
	for len(q.h) > 0 && !q.h[0].at.After(now) {
		t := heap.Pop(&q.h).(*timer)
		delete(q.byKey, t.key)
		fn(t.key)
	}
}

// len is the number of timers set.
func (q *timers) len() int { return len(q.h) }

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].key.compare(h[j].key) < 0
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// deadlines is the market's deadline queue: a heap per kind of timer
// (so that Tick and placeReady take the due ones of one kind), the
// auctions, gangs and jobs marked since their timers were last computed,
// and the order in which jobs became active (which Tick and placeReady
// visit due jobs in, as a scan of the active jobs would).
type deadlines struct {
	auctions, gangs, jobs timers
	// upkeep holds the upkeep items' timers by their place in upkeep.go's
	// table (a dozen: a scan is cheaper than a heap); ok false: unset.
	upkeep []upkeepTimer

	markedAuctions map[TaskKey]struct{}
	markedGangs    map[string]struct{}
	markedJobs     map[string]struct{}

	order map[string]uint64 // job -> when it became active
	seq   uint64
}

// next is the earliest timer of any kind.
func (d *deadlines) next() (time.Time, bool) {
	var at time.Time
	ok := false
	for _, q := range []*timers{&d.auctions, &d.gangs, &d.jobs} {
		if t, has := q.next(); has && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	for _, u := range d.upkeep {
		if u.ok && (!ok || u.at.Before(at)) {
			at, ok = u.at, true
		}
	}
	return at, ok
}

type upkeepTimer struct {
	at time.Time
	ok bool
}

// activate records that job became active now, unless it already is.
func (d *deadlines) activate(job string) {
	if d.order == nil {
		d.order = map[string]uint64{}
	}
	if _, ok := d.order[job]; !ok {
		d.seq++
		d.order[job] = d.seq
	}
}

// retimeAuction, retimeGang and retimeJob mark what may have changed its
// deadline: its timer is computed again before it is next read.
func (d *deadlines) retimeAuction(k TaskKey) {
	if d.markedAuctions == nil {
		d.markedAuctions = map[TaskKey]struct{}{}
	}
	d.markedAuctions[k] = struct{}{}
}

func (d *deadlines) retimeGang(id string) {
	if d.markedGangs == nil {
		d.markedGangs = map[string]struct{}{}
	}
	d.markedGangs[id] = struct{}{}
}

func (d *deadlines) retimeJob(id string) {
	if d.markedJobs == nil {
		d.markedJobs = map[string]struct{}{}
	}
	d.markedJobs[id] = struct{}{}
}

// putAuction and dropAuction add and remove a replica's auction; a job
// whose pending replica loses its auction is placed again (its timer).
func (sh *shared) putAuction(a *auction) {
	sh.auctions[a.id.Key] = a
	sh.dl.retimeAuction(a.id.Key)
	sh.dl.retimeJob(a.id.Key.Job)
}

func (sh *shared) dropAuction(k TaskKey) {
	delete(sh.parked, k)
	if _, ok := sh.auctions[k]; ok {
		delete(sh.auctions, k)
		sh.dl.retimeAuction(k)
		sh.dl.retimeJob(k.Job)
	}
}

// putGang and dropGang are putAuction and dropAuction for gangs.
func (sh *shared) putGang(g *gangAuction) {
	id := gangID(g.job, g.task)
	sh.gangs[id] = g
	sh.dl.retimeGang(id)
	sh.dl.retimeJob(g.job)
}

func (sh *shared) dropGang(job, task string) {
	id := gangID(job, task)
	delete(sh.parkedGangs, id)
	if _, ok := sh.gangs[id]; ok {
		delete(sh.gangs, id)
		sh.dl.retimeGang(id)
		sh.dl.retimeJob(job)
	}
}

// setTimers computes again the timers of everything marked.
func (sh *shared) setTimers() {
	d := &sh.dl
	// It runs at every event of a simulated node: even an empty map's
	// range and clear cost an iterator's set-up.
	if len(d.markedAuctions)+len(d.markedGangs)+len(d.markedJobs) == 0 {
		return
	}
	for k := range d.markedAuctions {
		key := timerKey{kind: timerAuction, task: k}
		if at, ok := auctionDeadline(sh.auctions[k]); ok {
			d.auctions.set(key, at)
		} else {
			d.auctions.stop(key)
		}
	}
	clear(d.markedAuctions)
	for id := range d.markedGangs {
		key := timerKey{kind: timerGang, id: id}
		if at, ok := gangDeadline(sh.gangs[id]); ok {
			d.gangs.set(key, at)
		} else {
			d.gangs.stop(key)
		}
	}
	clear(d.markedGangs)
	for id := range d.markedJobs {
		key := timerKey{kind: timerJob, id: id}
		if at, ok := sh.jobDeadline(id); ok {
			d.jobs.set(key, at)
		} else {
			d.jobs.stop(key)
		}
	}
	clear(d.markedJobs)
}

// auctionDeadline is when a's next step is due: its bid window closes,
// its award's answer times out, or its back-off ends.
func auctionDeadline(a *auction) (time.Time, bool) {
	switch {
	case a == nil:
		return time.Time{}, false
	case !a.closed:
		return a.closeAt, true
	case a.awardee != nil:
		return a.awardBy, true
	case !a.nextAt.IsZero():
		return a.nextAt, true
	}
	return time.Time{}, false
}

// gangDeadline is auctionDeadline for a gang: its holds time out, its
// window closes or its back-off ends.
func gangDeadline(g *gangAuction) (time.Time, bool) {
	switch {
	case g == nil:
		return time.Time{}, false
	case g.holding:
		return g.holdBy, true
	case g.nextAt.IsZero():
		return g.closeAt, true
	}
	return g.nextAt, true
}

// jobDeadline is when a job this node manages next needs Tick: a pending
// replica without an auction may be placed (its back-off ends: the zero
// time when it may be placed at once), or an awarded or running
// replica's lease lapses.
func (sh *shared) jobDeadline(id string) (time.Time, bool) {
	j := sh.jobs[id]
	if _, active := sh.dl.order[id]; !active || j == nil || j.State.Terminal() {
		delete(sh.dl.order, id)
		return time.Time{}, false
	}
	var at time.Time
	ok := false
	note := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	// a gang's replicas are consecutive: look its auction up once
	gangOf, inGang, looked := "", false, false
	for i := range j.Tasks {
		t := &j.Tasks[i]
		switch t.State {
		case TaskPending:
			if !looked || t.Key.Task != gangOf {
				gangOf, inGang, looked = t.Key.Task, sh.gangs[gangID(t.Key.Job, t.Key.Task)] != nil, true
			}
			if !inGang && sh.auctions[t.Key] == nil {
				note(t.NotBefore)
			}
		case TaskAwarded, TaskRunning:
			if !t.LeaseUntil.IsZero() {
				note(t.LeaseUntil)
			}
		}
	}
	return at, ok
}

// dueJobs takes the jobs whose timers are due, in the order they became
// active, marking each to be timed again.
func (sh *shared) dueJobs() []*JobRecord {
	sh.setTimers()
	var ids []string
	sh.dl.jobs.popDue(sh.now, func(k timerKey) { ids = append(ids, k.id) })
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(sh.dl.order[a], sh.dl.order[b]) })
	out := make([]*JobRecord, 0, len(ids))
	for _, id := range ids {
		sh.dl.retimeJob(id)
		if j := sh.jobs[id]; j != nil && !j.State.Terminal() {
			out = append(out, j)
		}
	}
	return out
}
