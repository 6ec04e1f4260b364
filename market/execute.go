package market

import (
	"fmt"
	"slices"
	"time"
)

// schedule starts queued contracts that fit, in queue order, and issues
// the evictions a preempting contract needs. A contract that fits beside
// the gang reservations starts; one that only fits in reserved room
// starts if it is predicted to end before the reservations can be
// honoured (backfill). Behind the first contract that cannot start, a
// contract starts only if it does not delay that one (headGuard).
func (c *contractor) schedule() {
	c.gang.refreshHead()
	roomAt := c.reservedRoomAt(c.now)
	var guard *headGuard
	for i := 0; i < len(c.queue); {
		k := c.queue[i]
		if _, gone := c.sp.gone[k.manager]; gone {
			// Its manager left the view (cut off, or gone until a copy
			// holder takes the job over and the contract re-homes): it
			// may have placed the replica again, its lease unrenewed.
			// Started now, the replica would run twice (the fault
			// campaign's split seed 374); it waits until its manager is
			// back or another one takes it. (A manager never in the view
			// — a bounded view in a large network — is no sign of that.)
			i++
			continue
		}
		al, ok := c.canStart(k.spec.Request, k.runtime, k.spec.Estimate, c.now, roomAt)
		if ok && guard != nil && !guard.admits(k.spec.Request, al, c.now.Add(k.runtime)) {
			ok = false
		} else if !ok && guard == nil {
			guard = c.guardFor(k, c.now)
		}
		if ok {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			if err := c.tix.startable(k); err != nil {
				c.tix.refuse(RefuseTicket, k.manager, k.spec.Key.Job, fmt.Sprintf("%s: not started: %v", k.spec.Key, err))
				c.send(k.manager, TaskStatus{Key: k.spec.Key, Epoch: k.spec.Epoch, Attempt: k.spec.Attempt, Node: c.cfg.Self, State: TaskFailed, ExitCode: -1, Reason: "not started: job ticket: " + err.Error(), Time: c.now})
				continue
			}
			c.free.Take(k.spec.Request, al)
			k.alloc, k.started, k.running, k.beat = al, c.now, true, c.now
			c.running[k.spec.Key] = k
			c.emit(StartTask{Task: k.spec, Alloc: al, Manager: k.manager})
			c.send(k.manager, TaskStatus{Key: k.spec.Key, Epoch: k.spec.Epoch, Attempt: k.spec.Attempt, Node: c.cfg.Self, State: TaskRunning, Time: c.now})
			continue
		}
		if k.preempt {
			for _, v := range c.victims(k.spec.Request, k.spec.Priority, c.cfg.PreemptMargin) {
				v.stopReason = "preempted"
				c.emit(StopTask{Key: v.spec.Key, Epoch: v.spec.Epoch, Reason: fmt.Sprintf("preempted by %s (priority %d > %d)", k.spec.Key, k.spec.Priority, v.spec.Priority), Grace: c.cfg.PreemptGrace})
			}
			k.preempt = false
		}
		i++
	}
}

// onCancelTask drops a queued contract or stops a running one.
// Only the task's manager may cancel it.
func (c *contractor) onCancelTask(from NodeID, ct CancelTask) {
	if h := c.holds[ct.Key]; h != nil && h.k.spec.Epoch == ct.Epoch && from == h.k.manager {
		delete(c.holds, ct.Key)
		c.free.Give(h.k.spec.Request, h.k.alloc)
		c.schedule()
		return
	}
	if k, ok := c.running[ct.Key]; ok && k.spec.Epoch == ct.Epoch && from == k.manager {
		if k.stopReason == "" {
			k.stopReason = "cancelled"
			c.emit(StopTask{Key: ct.Key, Epoch: ct.Epoch, Reason: ct.Reason, Grace: c.cfg.PreemptGrace})
		}
		return
	}
	for _, k := range c.queue {
		if k.spec.Key == ct.Key && k.spec.Epoch == ct.Epoch && from == k.manager {
			c.dequeue(ct.Key)
			c.send(k.manager, TaskStatus{Key: ct.Key, Epoch: ct.Epoch, Attempt: k.spec.Attempt, Node: c.cfg.Self, State: TaskCancelled, ExitCode: -1, Reason: ct.Reason, Time: c.now})
			return
		}
	}
}

// TaskExited reports that a task this market started has exited, with its
// exit code (-1 when killed or failed to start) and reason.
func (m *Market) TaskExited(now time.Time, key TaskKey, epoch uint64, exitCode int, reason string, outputs *DataRef) {
	m.enter(now)
	defer m.leave()
	c := m.con
	k, ok := c.running[key]
	if !ok || k.spec.Epoch != epoch {
		m.event(key.Job, fmt.Sprintf("exit of unknown task %s epoch %d ignored", key, epoch))
		return
	}
	delete(c.running, key)
	c.free.Give(k.spec.Request, k.alloc)
	ran := now.Sub(k.started)
	c.charge(k, ran)
	st := TaskStatus{Key: key, Epoch: epoch, Attempt: k.spec.Attempt, Node: m.cfg.Self, ExitCode: exitCode, Reason: reason, Time: now, Runtime: ran}
	switch {
	case k.stopReason == "preempted":
		st.State = TaskPreempted
	case k.stopReason == "cancelled":
		st.State = TaskCancelled
	case exitCode == 0:
		st.State, st.Outputs = TaskSucceeded, outputs
	default:
		st.State = TaskFailed
	}
	if st.State == TaskSucceeded || st.State == TaskFailed {
		r := c.runs[k.spec.Type]
		r[1]++
		if st.State == TaskSucceeded {
			r[0]++
			c.runtime.Observe(k.spec.Type, ran)
			m.emit(RecordRuntime{Type: k.spec.Type, Runtime: ran})
		}
		c.runs[k.spec.Type] = r
	}
	// The manager may be unreachable right now (restarting, partitioned):
	// repeat the final report until the manager acknowledges it — every
	// LeaseEvery for a lease after the end (the repeats renew the lease,
	// as the running reports did), then 1 s, 2 s, 4 s … apart,
	// maxResultRepeats times.
	st.AckWanted = true
	m.send(k.manager, st)
	m.con.addResult(&pendingResult{to: k.manager, awarder: k.awarder, st: st, next: m.now.Add(m.cfg.LeaseEvery), gap: m.cfg.LeaseEvery,
		expires: m.now.Add(m.cfg.LeaseTimeout + m.cfg.LeaseEvery*(1<<maxResultRepeats-1))})
	m.con.schedule()
}

// pendingResult is a final report being repeated to its manager.
type pendingResult struct {
	to NodeID
	// awarder is the manager that awarded the attempt (to changes when
	// the job re-homes).
	awarder NodeID
	st      TaskStatus
	next    time.Time
	gap     time.Duration
	sent    int
	// acked: the manager has the report (ResultAck); it is kept, unsent,
	// until expires, in case another node adopts the job (Rehome sends it
	// there).
	acked   bool
	expires time.Time // when the last repeat would go out
}

// maxResultRepeats bounds how often a final report is repeated; with
// doubling gaps from LeaseEvery (1 s) the last goes out about a minute
// after the task ended.
const maxResultRepeats = 6

// addResult keeps a final report for repeating.
func (c *contractor) addResult(r *pendingResult) {
	c.results = append(c.results, r)
	c.resultOf[r.id()] = r
	if c.resultsDue.IsZero() || r.next.Before(c.resultsDue) {
		c.resultsDue = r.next
	}
}

// repeatResults sends the final reports whose repeat is due, and drops
// those repeated maxResultRepeats times and the acknowledged ones whose
// time is up.
func (c *contractor) repeatResults() {
	if len(c.results) == 0 || c.now.Before(c.resultsDue) {
		return
	}
	keep := c.results[:0]
	var due time.Time
	for _, r := range c.results {
		if !c.now.Before(r.next) {
			if r.acked {
				c.dropResult(r)
				continue
			}
			c.send(r.to, r.st)
			if c.now.Sub(r.st.Time) < c.cfg.LeaseTimeout {
				// Still within a lease of the end: the manager hears from
				// this replica as often as while it ran. Backing off at
				// once, three lost reports let the lease lapse before the
				// fourth, and the replica ran again elsewhere (the fault
				// campaign's seed 593).
				r.next = c.now.Add(c.cfg.LeaseEvery)
			} else {
				r.sent++
				r.gap *= 2
				r.next = c.now.Add(r.gap)
			}
		}
		if r.sent < maxResultRepeats {
			keep = append(keep, r)
			if due.IsZero() || r.next.Before(due) {
				due = r.next
			}
		} else {
			c.dropResult(r)
		}
	}
	clear(c.results[len(keep):])
	c.results, c.resultsDue = keep, due
}

func (r *pendingResult) id() resultID { return resultID{r.st.Key, r.st.Epoch, r.st.Attempt} }

// dropResult forgets r's index entry (repeatResults drops r itself).
func (c *contractor) dropResult(r *pendingResult) {
	if c.resultOf[r.id()] == r {
		delete(c.resultOf, r.id())
	}
}

// onResultAck stops repeating the final report the manager acknowledged.
func (c *contractor) onResultAck(from NodeID, a ResultAck) {
	if r := c.resultOf[resultID{a.Key, a.Epoch, a.Attempt}]; r != nil && r.to == from && !r.acked {
		r.acked, r.next = true, r.expires
	}
}

// heartbeat renews the lease of every task this node holds (queued or
// running) with its manager, every LeaseEvery.
func (c *contractor) heartbeat() {
	if c.now.Sub(c.lastBeat) < c.cfg.LeaseEvery/4 {
		return // renewals are due at most every LeaseEvery; look four times as often
	}
	c.lastBeat = c.now
	beat := func(k *contract, st TaskState) {
		if c.now.Sub(k.beat) < c.cfg.LeaseEvery {
			return
		}
		k.beat = c.now
		c.send(k.manager, TaskStatus{Key: k.spec.Key, Epoch: k.spec.Epoch, Attempt: k.spec.Attempt, Node: c.cfg.Self, State: st, Time: c.now})
	}
	keys := make([]TaskKey, 0, len(c.running))
	for k := range c.running {
		keys = append(keys, k)
	}
	sortKeys(keys)
	for _, k := range keys {
		if r := c.running[k]; r.stopReason == "" {
			beat(r, TaskRunning)
		}
	}
	for _, k := range c.queue {
		beat(k, TaskAwarded)
	}
}

// sortKeys orders task keys by job, task, replica without formatting them.
func sortKeys(keys []TaskKey) { slices.SortFunc(keys, TaskKey.Compare) }

// nextBeat is when heartbeat next renews a lease: the earliest renewal
// due, but no sooner than a quarter of LeaseEvery after it last looked.
func (c *contractor) nextBeat() (time.Time, bool) {
	var beat time.Time
	due := func(k *contract) {
		if t := k.beat.Add(c.cfg.LeaseEvery); beat.IsZero() || t.Before(beat) {
			beat = t
		}
	}
	for _, k := range c.running {
		if k.stopReason == "" {
			due(k)
		}
	}
	for _, k := range c.queue {
		due(k)
	}
	if beat.IsZero() {
		return beat, false
	}
	if gate := c.lastBeat.Add(c.cfg.LeaseEvery / 4); gate.After(beat) {
		beat = gate
	}
	return beat, true
}
