package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/predict"
	"github.com/agora-sched/agora/node/commit"
	"github.com/agora-sched/agora/store"
)

// Limits of the event loop.
const (
	// loopQueue bounds the network input waiting for the loop; more is
	// dropped (and recovered by the core's timeouts) when it is full.
	loopQueue = 8192
	// callQueue bounds the exits, acks and API calls waiting for the
	// loop; their senders wait for room, so none is lost.
	callQueue = 1024
	// tickEvery is how often the loop ticks the market.
	tickEvery = 10 * time.Millisecond
	// stallAfter is the longest gap between two ticks that is not this
	// node standing still (its process stopped or starved of CPU, its
	// loop busy): the market is told of a longer one (Market.Paused), so
	// that it judges no lease by the silence it did not hear.
	stallAfter = time.Second
	// historySaveEvery is how often a changed runtime history is saved.
	historySaveEvery = 5 * time.Second
	// turnEvents bounds the queued events one loop turn runs before it
	// carries out their effects together (see loop).
	turnEvents = 256
	// eventQueue bounds the turns whose event lines wait for the event
	// writer; the loop waits when it is full.
	eventQueue = 1024
	// taskQueue bounds the task starts and stops waiting for the task
	// goroutine; the loop waits when it is full.
	taskQueue = 4096
	// commitQueue bounds the turns whose job records wait for the
	// committer; the loop waits when it is full.
	commitQueue = 1024
)

// The loop owns the market: every call into it runs on the loop goroutine,
// followed by carrying out its effects. This is the one place where the
// pure core meets I/O. Input comes in two disciplines, as in raft's
// node.run: network input (messages, adverts, load samples), which the
// core recovers from losing by its timeouts, goes through netIn and is
// dropped when the loop is behind; what must not be lost (task exits,
// replication acks, copies stored, peers gone, revocations, API calls)
// goes through calls, whose senders wait for room. Neither is ever sent
// to from the loop goroutine itself.

// input queues network input to run on the loop. It never blocks: when
// the queue is full the input is dropped and false returned.
func (n *Node) input(fn func()) bool {
	select {
	case n.netIn <- fn:
		return true
	default:
		n.met.dropped.Inc()
		log.Warnw("event loop queue full; dropping network input")
		return false
	}
}

// deliver queues fn, which must not be lost, to run on the loop, waiting
// for room; false only when the node is stopping (a restart recovers
// what it carried: exits from the execution records, copies from the
// store).
func (n *Node) deliver(fn func()) bool {
	select {
	case n.calls <- fn:
		return true
	case <-n.ctx.Done():
		return false
	}
}

// call runs fn on the loop and waits for it.
func (n *Node) call(fn func()) error {
	done := make(chan struct{})
	if !n.deliver(func() { fn(); close(done) }) {
		return fmt.Errorf("node is shutting down")
	}
	select {
	case <-done:
		return nil
	case <-n.ctx.Done():
		return fmt.Errorf("node is shutting down")
	}
}

func (n *Node) loop() {
	defer n.wg.Done()
	// From here on event lines go through the event writer; it ends
	// after the loop, once it has written them all.
	ch := make(chan eventBatch, eventQueue)
	n.evCh = ch
	n.wg.Add(1)
	go n.eventWriter(ch)
	defer close(ch)
	// Job records are committed by the committer, off the loop; it ends
	// after the loop once it has committed every turn and carried out
	// what waited for it (deferred calls run last first: this one before
	// closing the event writer's queue).
	cch := make(chan commit.Batch, commitQueue)
	committed := make(chan struct{})
	n.commitCh = cch
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(committed)
		commit.Run(cch, commit.Options{Commit: n.commit, CarryOut: n.carryOut, Failing: n.storeFailing,
			Stopping: n.ctx.Done(), MaxTurns: turnEvents, Done: func() { n.commitsPending.Add(-1) }})
	}()
	defer func() {
		close(cch)
		<-committed
	}()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	lastSave, lastTick := time.Now(), time.Now()
	for {
		select {
		case <-n.ctx.Done():
			return
		case fn := <-n.calls:
			fn()
			n.drainEvents(turnEvents - 1)
		case fn := <-n.netIn:
			fn()
			// Group commit: run whatever else is already queued (up to
			// turnEvents) before carrying out the effects, so that a burst
			// costs one write of each job record it touched and one store
			// commit, not one per event. Effects keep their order; they are
			// only carried out later in the same turn, and an idle node
			// still applies each event at once.
			n.drainEvents(turnEvents - 1)
		case <-t.C:
			// What is already queued counts before the clock does: after
			// a stall of this node's (CPU starvation, a pause), a report
			// waiting in the queue must be seen before its lease is judged
			// lapsed (select picks among ready cases at random).
			if gap := time.Since(lastTick); gap > stallAfter {
				log.Warnw("the loop stood still: leases extended by as much", "for", gap.Round(time.Millisecond))
				n.mkt.Paused(time.Now(), gap-tickEvery)
			}
			n.drainEvents(turnEvents)
			now := time.Now()
			n.mkt.Tick(now)
			lastTick = now
			if n.historyDirty && now.Sub(lastSave) > historySaveEvery {
				n.saveHistory()
				lastSave = now
			}
		}
		n.apply(n.mkt.Ready())
		n.publishState()
		for _, fn := range n.afterTurn {
			fn()
		}
		clear(n.afterTurn)
		n.afterTurn = n.afterTurn[:0]
	}
}

// syncEffects waits until every effect of the loop's turns so far has
// been carried out — job records committed, messages handed to the
// transport — or ctx ends or the node stops.
func (n *Node) syncEffects(ctx context.Context) error {
	done := make(chan struct{})
	err := n.call(func() {
		// After this turn's apply: a barrier behind whatever waits for
		// the committer (or none, when the loop carries out its effects).
		n.afterTurn = append(n.afterTurn, func() {
			if n.commitCh == nil {
				close(done)
				return
			}
			n.commitsPending.Add(1)
			n.commitCh <- commit.Batch{Done: done}
		})
	})
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.ctx.Done():
		return fmt.Errorf("node is shutting down")
	}
}

// drainEvents runs up to max queued events without waiting for more.
func (n *Node) drainEvents(max int) {
	for range max {
		// What must not be lost goes first: a flood of network input
		// never holds an exit back by more than one turn.
		select {
		case fn := <-n.calls:
			fn()
			continue
		default:
		}
		select {
		case fn := <-n.calls:
			fn()
		case fn := <-n.netIn:
			fn()
		default:
			return
		}
	}
}

// publishState copies what the adverts need out of the market and asks
// gossip to publish early when it changed a lot.
func (n *Node) publishState() {
	s := &softState{SoftState: n.mkt.SoftState()}
	now := time.Now()
	old := n.soft.Load()
	moved := s.Moved(old.SoftState)
	if moved || now.Sub(old.at) > 100*time.Millisecond {
		// The predicted wait simulates the node's schedule: compute it
		// only when the state moved or every 100 ms, not per event.
		s.wait, s.at = n.mkt.PredictedWait(now), now
	} else {
		s.wait, s.at = old.wait, old.at
	}
	n.soft.Store(s)
	if moved && n.gossip != nil {
		n.gossip.Nudge()
	}
}

// softState is what the loop publishes for readers off it: the market's
// soft state and the predicted wait, computed at.
type softState struct {
	market.SoftState
	wait time.Duration
	at   time.Time
}

// apply carries out the market's effects in order, with the store
// writes grouped: the SaveJob records (Ready puts them first) are
// written, the last version of each job only, in one commit before any
// other effect, so that every message that depends on a record leaves
// after it is persisted (market's caller duty 2); the event lines are
// appended in one commit after the other effects (nothing waits for
// them).
//
// A turn that saves job records hands them to the committer together with
// the effects that must not be seen before the records are in the store
// (messages, broadcasts, task starts and stops), so that the loop goes on
// with the next turn while the store commits: write-ahead order holds, and
// a crash loses a turn's records only with everything they announced.
// While any turn waits for the committer, later turns queue behind it even
// without records of their own, so that effects keep their order.
func (n *Node) apply(effects []market.Effect) {
	if len(effects) == 0 {
		return
	}
	recs := n.collectSaves(effects)
	switch {
	case n.commitCh == nil: // before the loop starts: commit here
		if err := n.commit(recs); err != nil {
			log.Errorw("save jobs", "jobs", len(recs), "err", err)
		}
		n.carryOut(effects)
	case len(recs) == 0 && n.commitsPending.Load() == 0:
		n.carryOut(effects)
	default:
		n.commitsPending.Add(1)
		n.commitCh <- commit.Batch{Recs: slices.Clone(recs), Effects: effects}
	}
	clear(recs)
	n.recBuf = recs[:0]
	n.loopEffects(effects)
}

// carryOut carries out the effects that leave the node or touch its
// tasks: messages, broadcasts, task starts and stops. It may run on the
// loop or on the committer.
func (n *Node) carryOut(effects []market.Effect) {
	for _, e := range effects {
		switch x := e.(type) {
		case market.Send:
			n.tr.Send(x.To, x.Msg)
		case market.Broadcast:
			n.tr.Broadcast(x.Msg)
		case market.PublishUsage:
			n.tr.PublishUsage(x.Summary)
		case market.StartTask:
			n.ex.Start(x)
		case market.StopTask:
			n.ex.Stop(x)
		case market.ForgetJob:
			n.forgetJob(x.Job, x.KeepEvents)
		case market.Replicate:
			n.pushCopies(x)
		case market.DropReplica:
			n.dropCopy(x.Job, x.Expired)
		}
	}
}

// loopEffects carries out, on the loop, the effects that touch the loop's
// own state or only record what happened: event lines (through the event
// writer), the runtime history's dirty mark and the round hook.
func (n *Node) loopEffects(effects []market.Effect) {
	evs := n.evBuf[:0]
	for _, e := range effects {
		switch x := e.(type) {
		case market.RecordRuntime:
			n.historyDirty = true
		case market.AttemptEnded:
			n.attemptEnded(x)
		case market.Event:
			line := x.Time.UTC().Format(time.RFC3339Nano) + " " + x.Text + "\n"
			evs = append(evs, store.LogAppend{Stream: eventsStream(x.Job), Data: []byte(line)})
			log.Debugw("market", "job", x.Job, "event", x.Text)
		case market.Refused:
			n.met.refused.WithLabelValues(x.Reason).Inc()
		case market.RoundClosed:
			n.met.rounds.Observe(x.Closed.Sub(x.Opened).Seconds())
			if f := n.cfg.OnRoundClosed; f != nil {
				f(x)
			}
		}
	}
	if len(evs) > 0 {
		n.writeEvents(slices.Clone(evs))
	}
	clear(evs)
	n.evBuf = evs[:0]
}

// eventBatch is one turn's event lines for the event writer, or (with
// done set) a barrier it closes once everything before it is written.
type eventBatch struct {
	logs []store.LogAppend
	done chan struct{}
}

// writeEvents appends event lines: on the event writer when it runs (the
// loop does not wait for the store commit, so that it is free for the next
// message, e.g. the bids of an auction it just opened), else at once.
func (n *Node) writeEvents(evs []store.LogAppend) {
	if n.evCh != nil {
		n.evCh <- eventBatch{logs: evs}
		return
	}
	if err := n.store.AppendLogs(evs); err != nil {
		log.Warnw("append events", "err", err)
	}
}

// eventWriter appends the loop's event lines in the order the loop produced
// them, as many turns per commit as are queued, until the loop closes evCh.
func (n *Node) eventWriter(ch <-chan eventBatch) {
	defer n.wg.Done()
	var logs []store.LogAppend
	var barriers []chan struct{}
	for b := range ch {
		logs, barriers = append(logs[:0], b.logs...), barriers[:0]
		if b.done != nil {
			barriers = append(barriers, b.done)
		}
	more:
		for len(logs) < 4096 {
			select {
			case b, ok := <-ch:
				if !ok {
					break more
				}
				logs = append(logs, b.logs...)
				if b.done != nil {
					barriers = append(barriers, b.done)
				}
			default:
				break more
			}
		}
		if err := n.store.AppendLogs(logs); err != nil {
			log.Warnw("append events", "err", err)
		}
		for _, d := range barriers {
			close(d)
		}
		clear(logs)
	}
}

// syncEvents waits until every event line the loop produced so far is in
// the store (or the node stops), so that a reader sees them.
func (n *Node) syncEvents() {
	done := make(chan struct{})
	if n.call(func() {
		if n.evCh != nil {
			n.evCh <- eventBatch{done: done}
		} else {
			close(done)
		}
	}) != nil {
		return
	}
	select {
	case <-done:
	case <-n.ctx.Done():
	}
}

// collectSaves gathers the SaveJob records among effects, each job's last
// version only, in n.recBuf.
func (n *Node) collectSaves(effects []market.Effect) []store.Entry[market.JobRecord] {
	recs := n.recBuf[:0]
	for _, e := range effects {
		x, ok := e.(market.SaveJob)
		if !ok {
			continue
		}
		recs = commit.PutLatest(recs, store.Entry[market.JobRecord]{Key: x.Job.ID, Value: x.Job})
	}
	return recs
}

// commit persists job records in one store commit.
func (n *Node) commit(recs []store.Entry[market.JobRecord]) error {
	if len(recs) == 0 {
		return nil
	}
	if err := n.jobs.PutAll(recs); err != nil {
		return err
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Key
	}
	return n.ledger.Add(ids...) // after the records: a crash between leaves the ledger short, never ahead
}

// storeFailing records whether the store refuses the committer's writes
// (err nil: it takes them again); the node is degraded meanwhile.
func (n *Node) storeFailing(err error) {
	was := n.storeErr.Swap(&err)
	switch {
	case err != nil && (was == nil || *was == nil):
		log.Errorw("degraded: the store refuses job records; messages and task starts wait, submissions are refused", "err", err)
	case err == nil && was != nil && *was != nil:
		log.Infow("the store takes job records again")
	}
}

// writable says why the node cannot take new work now, or returns nil.
func (n *Node) writable() error {
	if p := n.storeErr.Load(); p != nil && *p != nil {
		return fmt.Errorf("this node cannot store job records (retrying): %w", *p)
	}
	if err := n.store.Writable(); err != nil {
		return fmt.Errorf("this node cannot store new work: %w", err)
	}
	return nil
}

func eventsStream(job string) string { return "events/" + job }

// saveHistory persists the runtime predictor's state.
func (n *Node) saveHistory() {
	b, err := json.Marshal(n.mkt.History())
	if err == nil {
		err = n.store.PutMeta("predict", string(b))
	}
	if err != nil {
		log.Warnw("save prediction history", "err", err)
		return
	}
	n.historyDirty = false
}

func (n *Node) loadHistory() []predict.TypeStats {
	v, ok, err := n.store.GetMeta("predict")
	if err != nil || !ok {
		return nil
	}
	var st []predict.TypeStats
	if json.Unmarshal([]byte(v), &st) != nil {
		return nil
	}
	return st
}

// marketConfig builds the market's configuration from the node's.
func (n *Node) marketConfig() market.Config {
	mc := n.cfg.Market
	mc.Self = market.NodeID(n.host.ID().String())
	mc.Site, mc.Labels, mc.Capacity = n.cfg.Site, n.cfg.Labels, n.capacity
	mc.Limits = n.cfg.Sandbox.Enforcement(n.cfg.Runner)
	mc.AdvertInterval = n.cfg.AdvertInterval
	mc.Trust = n.marketBook()
	mc.Prover = keyProver{n.host.Peerstore().PrivKey(n.host.ID())}
	if n.checks != nil {
		mc.TicketChecks = n.checks
	}
	mc.Holds = func(id string) bool { return n.images.holds(id) || n.data.Store().Holds(id) }
	if n.users != nil {
		mc.LocalUser = n.users.Refusal
	}
	return mc
}

// peerFromAdvert converts a gossip member's advert to the market's view
// of it.
func peerFromAdvert(a gossip.Advert) market.Peer {
	return market.Peer{ID: market.NodeID(a.Peer.String()), Site: a.Site, Labels: a.Labels, Limits: a.Limits, Holds: a.Holds, Capacity: a.Capacity, Free: a.Free,
		Queue: a.Queue, PredictedWait: a.PredictedWait, Reserved: market.ReservedRoom{Gang: a.ReservedGang, Unreserved: a.Unreserved},
		Waiting:  market.WaitingGang{Gang: a.Waiting.Gang, Size: a.Waiting.Size, Request: a.Waiting.Request, Priority: a.Waiting.Priority, Since: a.Waiting.Since, Owner: a.Waiting.Owner},
		HeadRoom: market.HeadRoom{Gang: a.HeadRoom.Gang, At: a.HeadRoom.At, Never: a.HeadRoom.Never}, Users: usersFromAdvert(a.Users), Boot: a.Boot,
		Steal: market.StealOffer(a.Steal), Drained: a.Drained}
}

// hostOf is the IP address other replicas reach a node's host at: the
// first IP of its listen addresses (for this node) or of the addresses the
// peerstore knows for it, IPv4 first.
func (n *Node) hostOf(id market.NodeID) string {
	var addrs []ma.Multiaddr
	if string(id) == n.host.ID().String() {
		addrs = n.host.Addrs()
	} else if p, err := peer.Decode(string(id)); err == nil {
		addrs = n.host.Peerstore().Addrs(p)
	}
	var v6 string
	for _, a := range addrs {
		if ip, err := a.ValueForProtocol(ma.P_IP4); err == nil {
			return ip
		}
		if ip, err := a.ValueForProtocol(ma.P_IP6); err == nil && v6 == "" {
			v6 = ip
		}
	}
	if v6 != "" {
		return v6
	}
	return string(id)
}
