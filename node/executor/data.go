package executor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/node/data"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// A task's data (docs/data.md): its inputs are fetched and placed in its
// work directory before it starts; its outputs are stored and copied to
// their replica peers after it succeeded, before the success is reported.

// inputTimeout bounds fetching and placing an attempt's inputs: a minute
// and what 10 MB/s takes.
func inputTimeout(in []market.InputRef) time.Duration {
	var n int64
	for _, r := range in {
		n += r.Bytes
	}
	return time.Minute + time.Duration(n/(10<<20))*time.Second
}

// imageFetchLimit bounds fetching a task's image from peers: far beyond
// any link that keeps moving, since a transfer that stalls is given up
// by itself (imageshare.DefaultStall).
const imageFetchLimit = 24 * time.Hour

// fetchesImage reports whether an attempt of t fetches its image before
// it starts, when the engine lacks it.
func (x *Executor) fetchesImage(t market.TaskSpec) bool {
	return t.Image != "" && t.ImageID != "" && x.opts.FetchImage != nil
}

// inputsThenStart has the attempt's image and places its inputs off the
// task goroutine, then starts it as startTask would (resuming its
// checkpoint first when it has one); an image or input that cannot be
// had fails the attempt, naming it. A stop meanwhile means it never
// starts.
func (x *Executor) inputsThenStart(t market.TaskSpec, id string, spec runtime.Spec, sink runtime.LogSink, done func(runtime.Result), ck *ckRun) {
	limit := inputTimeout(t.Inputs)
	if x.fetchesImage(t) {
		limit += imageFetchLimit
	}
	x.beforeStart(id, limit, func(ctx context.Context, p *pendingStart) {
		t0 := time.Now()
		var err error
		if x.fetchesImage(t) {
			if err = x.opts.FetchImage(ctx, t.Image, t.ImageID); err != nil {
				err = fmt.Errorf("image %s: %w", t.Image, err)
			}
		}
		if err == nil && len(t.Inputs) > 0 {
			ictx, cancel := context.WithTimeout(ctx, inputTimeout(t.Inputs))
			err = x.placeInputs(ictx, t)
			cancel()
		}
		x.mu.Lock()
		delete(x.pending, id)
		cancelled, reason := p.cancelled || x.stopping.Load(), p.reason
		x.mu.Unlock()
		switch {
		case cancelled:
			done(runtime.Result{ExitCode: -1, Cancelled: true, Reason: strings.TrimSuffix("cancelled: "+reason, ": "), Finished: time.Now()})
		case err != nil:
			log.Warnw("task inputs", "task", t.Key, "err", err, "took", time.Since(t0))
			done(runtime.Result{ExitCode: -1, Reason: "start: " + err.Error(), Finished: time.Now()})
		case ck != nil && (t.Attempt > 1 || t.Epoch > 1):
			log.Infow("task inputs placed", "task", t.Key, "inputs", len(t.Inputs), "took", time.Since(t0))
			x.resumeThenStart(ck, id, spec, sink, done)
		default:
			log.Infow("task inputs placed", "task", t.Key, "inputs", len(t.Inputs), "took", time.Since(t0))
			x.launch(id, spec, sink, done, ck)
		}
	})
}

// placeInputs fetches each input this node lacks from its holders (then
// from the peers closest to it) and places it in the work directory.
// Everything happens beneath the task's directory through an os.Root, so
// what an earlier attempt left there (a symlink) cannot redirect it.
func (x *Executor) placeInputs(ctx context.Context, t market.TaskSpec) error {
	dir := x.taskDir(t.Key)
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	_ = root.RemoveAll("inputs")
	defer root.RemoveAll("inputs")
	ds := x.opts.Data.Store()
	for i, in := range t.Inputs {
		what := inputName(in)
		holders := x.holders(in)
		m, err := x.opts.Data.Fetch(ctx, in.Manifest, holders, data.Record{Job: t.Key.Job, Kind: data.KindCache, Expires: time.Now().Add(x.dataTTL())})
		if err != nil {
			return fmt.Errorf("input %s: %w", what, err)
		}
		stage := filepath.Join("inputs", fmt.Sprint(i))
		ds.RLock()
		err = checkpoint.Restore(ctx, m, filepath.Join(dir, stage), ds)
		ds.RUnlock()
		if err != nil {
			return fmt.Errorf("input %s: %w", what, err)
		}
		src := stage
		switch {
		case in.Upload:
			top, err := topEntry(m)
			if err != nil {
				return fmt.Errorf("input %s: %w", what, err)
			}
			src = path.Join(stage, top)
		case in.Select != "":
			src = path.Join(stage, in.Select)
			if _, err := root.Lstat(src); err != nil {
				return fmt.Errorf("input %s: %s is not in the outputs", what, in.Select)
			}
		}
		if err := place(root, src, path.Join("work", in.Path)); err != nil {
			return fmt.Errorf("input %s: %w", what, err)
		}
	}
	return nil
}

// holders are the peers to fetch an input from: those the manager named,
// then, for an upload, the peers closest to it, where copies are kept,
// and for outputs whose holders are all gone, every live peer (one may
// have fetched them since: a dependent task's node, an agora get's).
func (x *Executor) holders(in market.InputRef) []peer.ID {
	var out []peer.ID
	seen := map[peer.ID]bool{}
	for _, h := range in.Holders {
		if p, err := peer.Decode(string(h)); err == nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if in.Upload {
		return append(out, x.opts.Peers(market.UploadKey(in.Manifest), max(x.opts.DataReplicas, 0)+1, seen)...)
	}
	return append(out, x.opts.Peers(in.Manifest, -1, seen)...)
}

// place moves src to dst (both beneath root), replacing what is at dst;
// dst "work" (the work directory itself) takes src's entries.
func place(root *os.Root, src, dst string) error {
	if dst == "work" {
		f, err := root.Open(src)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := place(root, path.Join(src, n), path.Join(dst, n)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := root.RemoveAll(dst); err != nil {
		return err
	}
	if err := root.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return err
	}
	return root.Rename(src, dst)
}

// topEntry is an uploaded input's one top-level entry.
func topEntry(m checkpoint.Manifest) (string, error) {
	var top []string
	for _, e := range m.Entries {
		if !strings.Contains(e.Path, "/") {
			top = append(top, e.Path)
		}
	}
	if len(top) != 1 {
		return "", fmt.Errorf("an upload holds %d top-level entries, want 1", len(top))
	}
	return top[0], nil
}

func inputName(in market.InputRef) string {
	if in.Select != "" {
		return fmt.Sprintf("%d (%s, placed at %s)", in.Input, in.Select, in.Path)
	}
	return fmt.Sprintf("%d (placed at %s)", in.Input, in.Path)
}

// dataTTL is how long this node's outputs are kept by their holders.
func (x *Executor) dataTTL() time.Duration {
	if x.opts.DataRetention > 0 {
		return x.opts.DataRetention
	}
	return data.MaxRetention
}

// saveOutputs stores a succeeded attempt's outputs and copies them to
// their replica peers; it returns the reference the success reports.
func (x *Executor) saveOutputs(t market.TaskSpec, workDir string) (*market.DataRef, error) {
	ds := x.opts.Data.Store()
	paths := make([]string, len(t.Outputs))
	root, err := os.OpenRoot(workDir)
	if err != nil {
		return nil, err
	}
	for i, o := range t.Outputs {
		paths[i] = o.Path
		if err := checkOutput(root, o); err != nil {
			root.Close()
			return nil, err
		}
	}
	root.Close()
	ds.RLock()
	m, _, err := checkpoint.SnapshotPaths(workDir, paths, checkpoint.Meta{Job: t.Key.Job, Task: t.Key.Task, Replica: t.Key.Replica,
		Epoch: t.Epoch, Seq: uint64(max(t.Attempt, 0)), Created: time.Now()}, ds)
	var raw []byte
	if err == nil {
		raw, err = checkpoint.EncodeManifest(m)
	}
	var id string
	rec := data.Record{Job: t.Key.Job, Kind: data.KindOutput, Bytes: m.TotalBytes, Expires: time.Now().Add(x.dataTTL())}
	if err == nil {
		id, err = ds.Keep(raw, rec)
	}
	ds.RUnlock()
	if err != nil {
		return nil, err
	}
	ref := &market.DataRef{Manifest: id, Bytes: m.TotalBytes, Holders: []market.NodeID{market.NodeID(x.opts.Data.Self().String())}}
	ctx, cancel := context.WithTimeout(x.ctx, inputTimeout([]market.InputRef{{DataRef: *ref}}))
	defer cancel()
	peers := x.opts.Peers(market.DataKey(t.Key), -1, nil)
	for _, p := range x.opts.Data.Replicate(ctx, id, rec, x.dataTTL(), peers, max(x.opts.DataReplicas, 0)) {
		ref.Holders = append(ref.Holders, market.NodeID(p.String()))
	}
	return ref, nil
}

// checkOutput checks that an output exists and holds no more than its
// limit, before a byte of it is stored (symlinks are not followed).
func checkOutput(root *os.Root, o spec.Output) error {
	limit := o.Max
	if limit == 0 {
		limit = spec.MaxOutputBytes
	}
	if _, err := root.Lstat(o.Path); err != nil {
		return fmt.Errorf("output %s: not produced", o.Path)
	}
	var n int64
	err := fs.WalkDir(root.FS(), o.Path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			if n += info.Size(); n > limit {
				return fmt.Errorf("output %s: over its limit of %d bytes", o.Path, limit)
			}
		}
		return nil
	})
	return err
}

// dataSweepEvery is how often expired data is dropped and its chunks
// collected.
const dataSweepEvery = 5 * time.Minute

// sweepData drops expired data now and then, until the executor closes.
func (x *Executor) sweepData() {
	defer x.wg.Done()
	t := time.NewTicker(dataSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-x.ctx.Done():
			return
		case now := <-t.C:
			if m, c, err := x.opts.Data.Store().Sweep(now); err != nil {
				log.Warnw("data sweep", "err", err)
			} else if m+c > 0 {
				log.Infow("data sweep", "manifests", m, "chunks", c)
			}
		}
	}
}
