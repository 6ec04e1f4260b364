package node

import (
	"time"
)

// Retention of finished work. A job's manager keeps its record and event
// log, its replica peers their copies of the record, and its executors
// their execution records and task logs, each for the market's
// JobRetention after the job (or the attempt) finished; then each node
// deletes its own part. The manager's market decides when its record goes
// (market.ForgetJob, carried out by forgetJob); replicas and executors
// sweep on their own clocks, so that nothing waits for a manager that is
// gone.

// sweepEvery is how often a node looks for expired replicas and executions:
// an eighth of the retention, between a second and ten minutes.
func sweepEvery(retention time.Duration) time.Duration {
	return min(max(retention/8, time.Second), 10*time.Minute)
}

// forgetJob deletes what this node keeps of a job it managed: the stored
// record and, unless keepEvents, the event log (market.ForgetJob).
func (n *Node) forgetJob(id string, keepEvents bool) {
	// Off the ledger before the record goes: a crash between leaves the
	// ledger short of the store, never naming a job it lost.
	if err := n.ledger.Remove(id); err != nil {
		log.Warnw("forget job: ledger", "job", id, "err", err)
		return
	}
	if err := n.jobs.Delete(id); err != nil {
		log.Warnw("forget job record", "job", id, "err", err)
	}
	if keepEvents {
		return
	}
	if err := n.store.DeleteLog(eventsStream(id)); err != nil {
		log.Warnw("forget job events", "job", id, "err", err)
	}
	n.met.forgotten.Inc()
	log.Debugw("job forgotten", "job", id)
}

// retentionLoop expires finished replicas and executions until the node
// stops. A negative retention keeps everything.
func (n *Node) retentionLoop(retention time.Duration) {
	defer n.wg.Done()
	n.sweepLoop(retention, func(now time.Time) {
		execs, err := n.ex.ExpireExecutions(now, retention)
		if err != nil {
			log.Warnw("expire executions", "err", err)
		}
		n.met.expired.WithLabelValues("execution").Add(float64(execs))
		if execs > 0 {
			log.Infow("finished work expired", "executions", execs, "retention", retention)
		}
	})
}

// sweepLoop calls sweep every sweepEvery(retention) until the node
// stops; never for a negative retention (everything is kept).
func (n *Node) sweepLoop(retention time.Duration, sweep func(now time.Time)) {
	if retention < 0 {
		return
	}
	n.every(sweepEvery(retention), sweep)
}

// every calls fn every d until the node stops.
func (n *Node) every(d time.Duration, fn func(now time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			fn(now)
		}
	}
}
