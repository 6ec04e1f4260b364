package node

import (
	"container/heap"
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
// record and the event log (market.ForgetJob).
func (n *Node) forgetJob(id string) {
	if err := n.jobs.Delete(id); err != nil {
		log.Warnw("forget job record", "job", id, "err", err)
	}
	if err := n.store.DeleteLog(eventsStream(id)); err != nil {
		log.Warnw("forget job events", "job", id, "err", err)
	}
	n.met.forgotten.Inc()
	log.Debugw("job forgotten", "job", id)
}

// doneReplica is a finished replica waiting out the retention.
type doneReplica struct {
	at time.Time // the job's Finished
	id string
}

// doneHeap orders finished replicas by finish time, earliest first.
type doneHeap []doneReplica

func (h doneHeap) Len() int           { return len(h) }
func (h doneHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h doneHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *doneHeap) Push(x any)        { *h = append(*h, x.(doneReplica)) }
func (h *doneHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = doneReplica{}
	*h = old[:len(old)-1]
	return x
}

// noteDone queues a finished replica for expireReplicas; f.mu is held.
func (f *failover) noteDone(r replicaRecord) {
	at := r.Record.Finished
	if at.IsZero() {
		at = r.Updated
	}
	heap.Push(&f.done, doneReplica{at: at, id: r.Record.ID})
}

// dueReplicas pops the finished replicas whose retention ended by now.
func (f *failover) dueReplicas(now time.Time, retention time.Duration) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for len(f.done) > 0 && !f.done[0].at.Add(retention).After(now) {
		ids = append(ids, heap.Pop(&f.done).(doneReplica).id)
	}
	return ids
}

// expireReplicas deletes the finished replicas whose retention ended. A
// replica stored again after it was queued (its manager re-sent the
// finished record) is queued again, and deleting it once more is
// harmless.
func (n *Node) expireReplicas(now time.Time, retention time.Duration) int {
	deleted := 0
	for _, id := range n.fo.dueReplicas(now, retention) {
		r, ok, err := n.replicas.Get(id)
		if err != nil || !ok || !r.Record.State.Terminal() {
			continue // gone already, or unfinished again: not ours to drop
		}
		if err := n.replicas.Delete(id); err != nil {
			log.Warnw("expire replica", "job", id, "err", err)
			continue
		}
		deleted++
	}
	return deleted
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
			reps := n.expireReplicas(now, retention)
			execs, err := n.expireExecutions(now, retention)
			if err != nil {
				log.Warnw("expire executions", "err", err)
			}
			n.met.expired.WithLabelValues("replica").Add(float64(reps))
			n.met.expired.WithLabelValues("execution").Add(float64(execs))
			if reps > 0 || execs > 0 {
				log.Infow("finished work expired", "replicas", reps, "executions", execs, "retention", retention)
			}
		}
	}
}
