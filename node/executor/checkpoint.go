package executor

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/checkpoints"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// Checkpoints of running tasks. A task whose spec sets a checkpoint
// interval is snapshotted by its own goroutine every interval and once
// more when it exits (unless it succeeded, or the node is being killed);
// each new snapshot's manifest is kept in the store and pushed, with the
// chunks the replicas lack, to the ckReplicas live peers closest to the
// task replica's key. A later attempt restores the newest manifest it can
// find before its process starts (resume.go).

// Checkpoint policy.
const (
	// ckReplicas is how many peers keep a copy of each checkpoint.
	ckReplicas = 2
	// ckPushTimeout bounds pushing one periodic snapshot to the replicas.
	ckPushTimeout = 10 * time.Second
	// ckFinalPushTimeout bounds the snapshot taken after the task exited,
	// which delays its exit report.
	ckFinalPushTimeout = 5 * time.Second
	// ckRefreshEvery re-keeps and re-pushes an unchanged checkpoint, so
	// replicas do not drop it as stale (manifestTTL) while the task runs.
	ckRefreshEvery = 2 * time.Minute
)

// pendingStart is an attempt waiting for its checkpoint before it starts.
type pendingStart struct {
	cancelled bool
	reason    string
	abort     context.CancelFunc
}

func (x *Executor) isActive(key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.active[key] > 0
}

// ckRun is one attempt of a checkpointing task on this node.
type ckRun struct {
	key      checkpoints.Key
	epoch    uint64
	task     market.TaskSpec // what a resume may start from (MayResumeFrom)
	dir      string
	interval time.Duration
	looping  bool // a snapshot goroutine was started (set before it runs)
	stop     chan struct{}
	stopOnce sync.Once
	stopped  chan struct{}

	// Owned by the snapshot goroutine, then by finishCheckpoints.
	n       uint64              // snapshots taken by this attempt
	content string              // content hash of the newest kept manifest
	m       checkpoint.Manifest // the newest kept manifest
	raw     []byte              // and its encoding
	kept    time.Time           // when it was kept
	pushed  map[peer.ID]string  // content hash each replica acknowledged
}

// newCkRun registers an attempt of a checkpointing task.
func (x *Executor) newCkRun(t market.TaskSpec, dir string) *ckRun {
	ck := &ckRun{key: *checkpoints.KeyOf(t.Key), epoch: t.Epoch, task: t, dir: dir, interval: t.CheckpointInterval,
		stop: make(chan struct{}), stopped: make(chan struct{}), pushed: map[peer.ID]string{}}
	x.mu.Lock()
	x.active[ck.key.String()]++
	x.mu.Unlock()
	return ck
}

// launch starts a task's process unless the node is stopping.
func (x *Executor) launch(id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result), ck *ckRun) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.launchLocked(id, spec, sink, done, ck)
}

// launchLocked is launch with x.mu held, so that a stop or a teardown
// sees the task either not yet started or in the runner.
func (x *Executor) launchLocked(id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result), ck *ckRun) {
	if x.stopping.Load() {
		go done(runtime.Result{ExitCode: -1, Reason: "node stopping", Finished: time.Now()})
		return
	}
	if ck != nil {
		ck.looping = true
		x.wg.Add(1)
		go x.checkpointLoop(ck)
	}
	log.Infow("starting task", "task", spec.JobID+"/"+spec.Task, "replica", spec.Replica, "attempt", spec.Attempt, "epoch", spec.Epoch, "gpus", spec.GPUs)
	if err := x.runner.Start(id, spec, sink, done); err != nil {
		log.Errorw("start task", "id", id, "err", err)
		go done(runtime.Result{ExitCode: -1, Reason: "start: " + err.Error(), Finished: time.Now()})
		return
	}
	if x.opts.TasksStarted != nil {
		x.opts.TasksStarted.Inc()
	}
}

// stopTask carries out a StopTask: an attempt still restoring its
// checkpoint is marked so that it never starts; a running one is stopped.
func (x *Executor) stopTask(st market.StopTask) {
	id := runID(st.Key, st.Epoch)
	x.mu.Lock()
	if p, ok := x.pending[id]; ok {
		p.cancelled, p.reason = true, st.Reason
		p.abort()
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	if !x.runner.Stop(id, st.Reason) {
		log.Debugw("stop of a task not running", "task", st.Key)
	}
}

// setStopping marks the node stopping: no task starts after it returns,
// and attempts restoring their checkpoints give up.
func (x *Executor) setStopping() {
	if x == nil {
		x.stopping.Store(true)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopping.Store(true)
	for _, p := range x.pending {
		p.abort()
	}
}

// killTasks kills every task process at once (SIGKILL), as a kill -9 of
// the node would take them down.
func (x *Executor) killTasks() {
	for _, id := range x.runner.Running() {
		x.runner.Kill(id)
	}
}

// checkpointLoop snapshots a running attempt every interval until it ends.
func (x *Executor) checkpointLoop(ck *ckRun) {
	defer x.wg.Done()
	defer close(ck.stopped)
	t := time.NewTicker(ck.interval)
	defer t.Stop()
	for {
		select {
		case <-ck.stop:
			return
		case <-x.ctx.Done():
			return
		case <-t.C:
			x.checkpointNow(ck, ckPushTimeout)
		}
	}
}

// finishCheckpoints runs when an attempt ended, before its exit is
// reported: it stops the snapshot goroutine, then drops the checkpoint of
// a replica that succeeded or takes and pushes a last snapshot of one
// that did not (the state a task writes on SIGTERM). A node being killed
// does neither.
func (x *Executor) finishCheckpoints(ck *ckRun, r runtime.Result) {
	if ck == nil {
		return
	}
	ck.stopOnce.Do(func() { close(ck.stop) })
	defer func() {
		x.mu.Lock()
		if x.active[ck.key.String()]--; x.active[ck.key.String()] <= 0 {
			delete(x.active, ck.key.String())
		}
		x.mu.Unlock()
	}()
	if x.killing.Load() {
		return
	}
	if ck.looping {
		<-ck.stopped
	}
	switch {
	case r.Started.IsZero():
		// Never ran: the directory holds at most what was restored.
	case r.ExitCode == 0 && !r.Cancelled && !r.TimedOut:
		if err := x.ck.Store().Drop(ck.key.String()); err != nil {
			log.Warnw("drop checkpoint", "task", ck.key.String(), "err", err)
		}
		// Collected by the sweep goroutine: GC waits for restores in
		// progress, which must not delay this exit's report.
		x.ck.Collect()
	default:
		x.checkpointNow(ck, ckFinalPushTimeout)
	}
}

// contentID hashes what a manifest says about the files, not when or by
// which attempt it was taken.
func contentID(m checkpoint.Manifest) string {
	m.Epoch, m.Seq, m.CreatedNs = 0, 0, 0
	id, _ := checkpoint.ManifestID(m)
	return id
}

// checkpointNow takes a snapshot of the attempt's directory, keeps it if
// its contents changed (or a refresh is due) and pushes the newest kept
// manifest to the replicas that lack it.
func (x *Executor) checkpointNow(ck *ckRun, timeout time.Duration) {
	if x.killing.Load() || x.ctx.Err() != nil {
		return
	}
	now := time.Now()
	key := ck.key.String()
	cs := x.ck.Store()
	ck.n++
	meta := checkpoint.Meta{Job: ck.key.Job, Task: ck.key.Task, Replica: ck.key.Replica, Epoch: ck.epoch,
		Seq: ck.epoch<<32 | ck.n&(1<<32-1), Created: now}
	cs.RLock()
	m, st, err := checkpoint.Snapshot(ck.dir, meta, cs)
	if err != nil {
		cs.RUnlock()
		log.Warnw("checkpoint snapshot", "task", key, "err", err)
		return
	}
	content := contentID(m)
	force := now.Sub(ck.kept) >= ckRefreshEvery
	if content != ck.content || force {
		raw, err := checkpoint.EncodeManifest(m)
		if err == nil {
			err = cs.Keep(key, "", m, raw, now)
		}
		cs.RUnlock()
		if err != nil {
			log.Warnw("keep checkpoint", "task", key, "seq", m.Seq, "err", err)
			return
		}
		ck.content, ck.m, ck.raw, ck.kept = content, m, raw, now
		log.Debugw("checkpoint taken", "task", key, "seq", m.Seq, "files", st.Files, "bytes", st.TotalBytes,
			"new_chunks", st.NewChunks, "took", time.Since(now))
	} else {
		cs.RUnlock()
	}
	if ck.raw == nil || x.killing.Load() {
		return
	}
	x.pushCheckpoint(ck, force, timeout)
}

// pushCheckpoint sends the attempt's newest kept manifest, with the
// chunks they lack, to the replica peers that have not acknowledged it.
func (x *Executor) pushCheckpoint(ck *ckRun, force bool, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(x.ctx, timeout)
	defer cancel()
	targets := x.opts.Peers(ck.key.String(), ckReplicas, nil)
	errs := make([]error, len(targets))
	sent := make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, p := range targets {
		if !force && ck.pushed[p] == ck.content {
			continue
		}
		sent[i] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = x.ck.PushTo(ctx, p, ck.key, ck.m, ck.raw)
		}()
	}
	wg.Wait()
	for i, p := range targets {
		switch {
		case !sent[i]:
		case errs[i] != nil:
			delete(ck.pushed, p)
			log.Infow("checkpoint push failed", "task", ck.key.String(), "peer", p, "err", errs[i])
		default:
			ck.pushed[p] = ck.content
		}
	}
}
