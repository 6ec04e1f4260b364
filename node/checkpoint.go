package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/query"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// Checkpoints of running tasks. A task whose spec sets a checkpoint
// interval is snapshotted by its own goroutine every interval and once
// more when it exits (unless it succeeded, or the node is being killed);
// each new snapshot's manifest is kept in the store and pushed, with the
// chunks the replicas lack, to the ckReplicas live peers closest to the
// task replica's key. A later attempt restores the newest manifest it can
// find before its process starts (checkpoint_resume.go).

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
	// ckSweepEvery is how often stale manifests and unreferenced chunks
	// are collected.
	ckSweepEvery = time.Minute
)

// checkpoints is the node's checkpoint state.
type checkpoints struct {
	cs      *ckStore
	inbound chan struct{} // semaphore of served streams
	collect chan struct{} // asks the sweep goroutine for a GC now

	// mu orders task starts against stops and teardown; it guards the
	// fields below and the node's stopping flag changes.
	mu      sync.Mutex
	pending map[string]*pendingStart // run ID → attempt restoring before start
	active  map[string]int           // key → attempts of it running here
}

// pendingStart is an attempt waiting for its checkpoint before it starts.
type pendingStart struct {
	cancelled bool
	reason    string
	abort     context.CancelFunc
}

func newCheckpoints(n *Node) *checkpoints {
	return &checkpoints{cs: newCkStore(n.store), inbound: make(chan struct{}, maxCkInbound), collect: make(chan struct{}, 1),
		pending: map[string]*pendingStart{}, active: map[string]int{}}
}

func (c *checkpoints) isActive(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active[key] > 0
}

// ckRun is one attempt of a checkpointing task on this node.
type ckRun struct {
	key      ckKey
	epoch    uint64
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
func (n *Node) newCkRun(t market.TaskSpec, dir string) *ckRun {
	ck := &ckRun{key: *wireKey(t.Key), epoch: t.Epoch, dir: dir, interval: t.CheckpointInterval,
		stop: make(chan struct{}), stopped: make(chan struct{}), pushed: map[peer.ID]string{}}
	n.ck.mu.Lock()
	n.ck.active[ck.key.String()]++
	n.ck.mu.Unlock()
	return ck
}

// launch starts a task's process unless the node is stopping.
func (n *Node) launch(id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result), ck *ckRun) {
	n.ck.mu.Lock()
	defer n.ck.mu.Unlock()
	n.launchLocked(id, spec, sink, done, ck)
}

// launchLocked is launch with n.ck.mu held, so that a stop or a teardown
// sees the task either not yet started or in the runner.
func (n *Node) launchLocked(id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result), ck *ckRun) {
	if n.stopping.Load() {
		go done(runtime.Result{ExitCode: -1, Reason: "node stopping", Finished: time.Now()})
		return
	}
	if ck != nil {
		ck.looping = true
		n.wg.Add(1)
		go n.checkpointLoop(ck)
	}
	log.Infow("starting task", "task", spec.JobID+"/"+spec.Task, "replica", spec.Replica, "attempt", spec.Attempt, "epoch", spec.Epoch, "gpus", spec.GPUs)
	if err := n.runner.Start(id, spec, sink, done); err != nil {
		log.Errorw("start task", "id", id, "err", err)
		go done(runtime.Result{ExitCode: -1, Reason: "start: " + err.Error(), Finished: time.Now()})
		return
	}
	n.met.tasksStarted.Inc()
}

// stopTask carries out a StopTask: an attempt still restoring its
// checkpoint is marked so that it never starts; a running one is stopped.
func (n *Node) stopTask(x market.StopTask) {
	id := runID(x.Key, x.Epoch)
	n.ck.mu.Lock()
	if p, ok := n.ck.pending[id]; ok {
		p.cancelled, p.reason = true, x.Reason
		p.abort()
		n.ck.mu.Unlock()
		return
	}
	n.ck.mu.Unlock()
	if !n.runner.Stop(id, x.Reason) {
		log.Debugw("stop of a task not running", "task", x.Key)
	}
}

// setStopping marks the node stopping: no task starts after it returns,
// and attempts restoring their checkpoints give up.
func (n *Node) setStopping() {
	if n.ck == nil {
		n.stopping.Store(true)
		return
	}
	n.ck.mu.Lock()
	defer n.ck.mu.Unlock()
	n.stopping.Store(true)
	for _, p := range n.ck.pending {
		p.abort()
	}
}

// killTasks kills every task process at once (SIGKILL), as a kill -9 of
// the node would take them down.
func (n *Node) killTasks() {
	for _, id := range n.runner.Running() {
		n.runner.Kill(id)
	}
}

// checkpointLoop snapshots a running attempt every interval until it ends.
func (n *Node) checkpointLoop(ck *ckRun) {
	defer n.wg.Done()
	defer close(ck.stopped)
	t := time.NewTicker(ck.interval)
	defer t.Stop()
	for {
		select {
		case <-ck.stop:
			return
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.checkpointNow(ck, ckPushTimeout)
		}
	}
}

// finishCheckpoints runs when an attempt ended, before its exit is
// reported: it stops the snapshot goroutine, then drops the checkpoint of
// a replica that succeeded or takes and pushes a last snapshot of one
// that did not (the state a task writes on SIGTERM). A node being killed
// does neither.
func (n *Node) finishCheckpoints(ck *ckRun, r runtime.Result) {
	if ck == nil {
		return
	}
	ck.stopOnce.Do(func() { close(ck.stop) })
	defer func() {
		n.ck.mu.Lock()
		if n.ck.active[ck.key.String()]--; n.ck.active[ck.key.String()] <= 0 {
			delete(n.ck.active, ck.key.String())
		}
		n.ck.mu.Unlock()
	}()
	if n.killing.Load() {
		return
	}
	if ck.looping {
		<-ck.stopped
	}
	switch {
	case r.Started.IsZero():
		// Never ran: the directory holds at most what was restored.
	case r.ExitCode == 0 && !r.Cancelled && !r.TimedOut:
		if err := n.ck.cs.drop(ck.key.String()); err != nil {
			log.Warnw("drop checkpoint", "task", ck.key.String(), "err", err)
		}
		// Collected by the sweep goroutine: GC waits for restores in
		// progress, which must not delay this exit's report.
		select {
		case n.ck.collect <- struct{}{}:
		default:
		}
	default:
		n.checkpointNow(ck, ckFinalPushTimeout)
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
func (n *Node) checkpointNow(ck *ckRun, timeout time.Duration) {
	if n.killing.Load() || n.ctx.Err() != nil {
		return
	}
	now := time.Now()
	key := ck.key.String()
	cs := n.ck.cs
	ck.n++
	meta := checkpoint.Meta{Job: ck.key.Job, Task: ck.key.Task, Replica: ck.key.Replica, Epoch: ck.epoch,
		Seq: ck.epoch<<32 | ck.n&(1<<32-1), Created: now}
	cs.gcMu.RLock()
	m, st, err := checkpoint.Snapshot(ck.dir, meta, cs)
	if err != nil {
		cs.gcMu.RUnlock()
		log.Warnw("checkpoint snapshot", "task", key, "err", err)
		return
	}
	content := contentID(m)
	force := now.Sub(ck.kept) >= ckRefreshEvery
	if content != ck.content || force {
		raw, err := checkpoint.EncodeManifest(m)
		if err == nil {
			err = cs.keep(key, m, raw, now)
		}
		cs.gcMu.RUnlock()
		if err != nil {
			log.Warnw("keep checkpoint", "task", key, "seq", m.Seq, "err", err)
			return
		}
		ck.content, ck.m, ck.raw, ck.kept = content, m, raw, now
		log.Debugw("checkpoint taken", "task", key, "seq", m.Seq, "files", st.Files, "bytes", st.TotalBytes,
			"new_chunks", st.NewChunks, "took", time.Since(now))
	} else {
		cs.gcMu.RUnlock()
	}
	if ck.raw == nil || n.killing.Load() {
		return
	}
	n.pushCheckpoint(ck, force, timeout)
}

// pushCheckpoint sends the attempt's newest kept manifest, with the
// chunks they lack, to the replica peers that have not acknowledged it.
func (n *Node) pushCheckpoint(ck *ckRun, force bool, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(n.ctx, timeout)
	defer cancel()
	targets := n.closestPeers(ck.key.String(), ckReplicas, nil)
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
			errs[i] = n.pushTo(ctx, p, ck.key, ck.m, ck.raw)
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

// pushTo sends p the chunks of m it lacks, then m itself. A manifest
// refused for missing chunks (collected meanwhile) is pushed once more.
func (n *Node) pushTo(ctx context.Context, p peer.ID, key ckKey, m checkpoint.Manifest, raw []byte) error {
	ids := m.ChunkIDs()
	for attempt := 0; ; attempt++ {
		var lack []string
		for i := 0; i < len(ids); i += maxCkIDs {
			part := ids[i:min(i+maxCkIDs, len(ids))]
			rep, err := n.ckCall(ctx, p, ckRequest{Op: opMissing, IDs: part})
			if err != nil {
				return err
			}
			asked := make(map[string]bool, len(part))
			for _, id := range part {
				asked[id] = true
			}
			for _, id := range rep.Missing {
				if asked[id] {
					lack = append(lack, id)
					asked[id] = false
				}
			}
		}
		for _, id := range lack {
			data, ok, err := n.ck.cs.Get(id)
			if err == nil && !ok {
				err = fmt.Errorf("chunk %s is not held here", id)
			}
			if err != nil {
				return err
			}
			if _, err := n.ckCall(ctx, p, ckRequest{Op: opPut, ID: id, Data: data}); err != nil {
				return err
			}
		}
		_, err := n.ckCall(ctx, p, ckRequest{Op: opManifest, Key: &key, Manifest: raw})
		if err == nil || attempt == 1 || !strings.Contains(err.Error(), "chunks missing") {
			return err
		}
	}
}

// closestPeers returns up to r live peers (not in skip) ordered by the
// XOR distance between SHA-256 of their peer ID text and SHA-256 of key;
// r < 0 returns them all (at most query.FanoutLimit).
func (n *Node) closestPeers(key string, r int, skip map[peer.ID]bool) []peer.ID {
	target := sha256.Sum256([]byte(key))
	type cand struct {
		id   peer.ID
		dist [sha256.Size]byte
	}
	var cs []cand
	for _, m := range n.Peers() {
		id := m.Advert.Peer
		if skip[id] || id == n.host.ID() {
			continue
		}
		h := sha256.Sum256([]byte(id.String()))
		c := cand{id: id}
		for i := range h {
			c.dist[i] = h[i] ^ target[i]
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return bytes.Compare(cs[i].dist[:], cs[j].dist[:]) < 0 })
	if r < 0 || r > query.FanoutLimit {
		r = query.FanoutLimit
	}
	var out []peer.ID
	for _, c := range cs {
		if len(out) == r {
			break
		}
		out = append(out, c.id)
	}
	return out
}

// checkpointSweep drops stale manifests and unreferenced chunks every
// ckSweepEvery.
func (n *Node) checkpointSweep() {
	defer n.wg.Done()
	t := time.NewTicker(ckSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.ck.collect:
			chunks, err := n.ck.cs.gc(time.Now())
			if err != nil {
				log.Warnw("checkpoint gc", "err", err)
			} else {
				log.Debugw("checkpoint gc", "chunks", chunks)
			}
		case now := <-t.C:
			mans, chunks, err := n.ck.cs.sweep(now, n.ck.isActive)
			switch {
			case err != nil:
				log.Warnw("checkpoint sweep", "err", err)
			case mans > 0 || chunks > 0:
				log.Infow("checkpoint sweep", "manifests", mans, "chunks", chunks)
			}
		}
	}
}
