package node

import (
	"os"
	"path/filepath"
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

// sweepEvery is how often a node looks for expired replicas and
// executions: an eighth of the retention, between a second and ten
// minutes.
func sweepEvery(retention time.Duration) time.Duration {
	return min(max(retention/8, time.Second), 10*time.Minute)
}

// forgetJob deletes what this node keeps of a job it managed: the stored
// record and, unless keepEvents, the event log (market.ForgetJob).
func (n *Node) forgetJob(id string, keepEvents bool) {
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

// expireExecutions deletes the execution records and task logs of
// attempts this node ran that finished more than retention ago, and then
// the task directories of jobs it keeps no execution of.
func (n *Node) expireExecutions(now time.Time, retention time.Duration) (int, error) {
	var due []execution
	err := n.execs.Scan("", func(_ string, ex execution) (bool, error) {
		if !ex.Finished.IsZero() && !ex.Finished.Add(retention).After(now) {
			due = append(due, ex)
		}
		return true, nil
	})
	deleted := 0
	for _, ex := range due {
		if derr := n.store.DeleteLog(ex.Stream); derr != nil {
			log.Warnw("expire task log", "stream", ex.Stream, "err", derr)
			continue
		}
		if derr := n.execs.Delete(ex.Stream); derr != nil {
			log.Warnw("expire execution", "stream", ex.Stream, "err", derr)
			continue
		}
		deleted++
	}
	jobs := map[string]bool{}
	for _, ex := range due {
		if !jobs[ex.Key.Job] {
			jobs[ex.Key.Job] = true
			job := ex.Key.Job
			// On the task goroutine, which starts tasks: a new attempt of
			// the job starts either before the check (and keeps the
			// directory) or after the removal (and makes it again).
			n.onTasks(func() { n.removeTaskDirs(job) })
		}
	}
	return deleted, err
}

// removeTaskDirs deletes the task directories of a job (work and
// checkpoint directories of every replica run here) unless the node still
// keeps an execution of it. It runs on the task goroutine.
func (n *Node) removeTaskDirs(job string) {
	if c, err := n.execs.Count("task/" + job + "/"); err != nil || c > 0 {
		return
	}
	if err := os.RemoveAll(filepath.Join(n.cfg.DataDir, "tasks", job)); err != nil {
		log.Warnw("remove task directories", "job", job, "err", err)
	}
}

// retentionLoop expires finished replicas and executions until the node
// stops. A negative retention keeps everything.
func (n *Node) retentionLoop(retention time.Duration) {
	defer n.wg.Done()
	if retention < 0 {
		return
	}
	t := time.NewTicker(sweepEvery(retention))
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			execs, err := n.expireExecutions(now, retention)
			if err != nil {
				log.Warnw("expire executions", "err", err)
			}
			n.met.expired.WithLabelValues("execution").Add(float64(execs))
			if execs > 0 {
				log.Infow("finished work expired", "executions", execs, "retention", retention)
			}
		}
	}
}
