package market

import "time"

// Drain makes this node leave the market gracefully: it stops bidding and
// stealing, hands its queued replicas back to their managers (reported
// preempted, so they are placed again without counting a failure), gives
// back gang holds, and stops its running replicas with the preemption
// grace — their exits are reported as preempted too, and a checkpointing
// task takes its final snapshot on SIGTERM. A drained node either stops
// or, with Undrain, takes work again.
func (m *Market) Drain(now time.Time) {
	m.enter(now)
	defer m.leave()
	c := m.con
	if m.con.draining {
		return
	}
	m.con.draining = true
	for _, k := range c.queue {
		m.send(k.manager, TaskStatus{Key: k.spec.Key, Epoch: k.spec.Epoch, Attempt: k.spec.Attempt, Node: m.cfg.Self,
			State: TaskPreempted, ExitCode: -1, Reason: "node draining", Time: m.now})
	}
	c.queue = nil
	for key, h := range c.holds {
		delete(c.holds, key)
		c.free.Give(h.k.spec.Request, h.k.alloc)
	}
	for _, key := range m.Running() {
		k := c.running[key]
		if k.stopReason == "" {
			k.stopReason = "preempted"
			m.emit(StopTask{Key: key, Epoch: k.spec.Epoch, Reason: "node draining", Grace: m.cfg.PreemptGrace})
		}
	}
	m.event("", "draining: stopped bidding, handed back queued tasks, stopping running ones")
}

// Undrain ends a drain: the node bids, steals and takes awards again.
// What Drain handed back stays where the managers placed it since.
func (m *Market) Undrain(now time.Time) {
	m.enter(now)
	defer m.leave()
	if !m.con.draining {
		return
	}
	m.con.draining = false
	m.event("", "undrained: bidding again")
}

// Draining reports whether Drain was called and not undone.
func (m *Market) Draining() bool { return m.con.draining }

// Idle reports whether this node holds no task: nothing queued, running
// or held.
func (m *Market) Idle() bool {
	return len(m.con.queue) == 0 && len(m.con.running) == 0 && len(m.con.holds) == 0
}
