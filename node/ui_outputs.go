package node

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// OutputsArchive implements web.Source: a task replica's outputs as a
// gzipped tar written to w, for the dashboard's download. The caller must
// be allowed the job's detail (Job checks); the outputs are fetched from
// their holders first, as for agora get, and every chunk is checked
// against its hash on the way (checkpoint.Restore).
func (n *Node) OutputsArchive(ctx context.Context, w io.Writer, id, task string, replica int) error {
	j, err := n.Job(ctx, id)
	if err != nil {
		return err
	}
	var out *market.DataRef
	var key market.TaskKey
	for _, t := range j.Tasks {
		if t.Key.Task == task && t.Key.Replica == replica && t.Outputs != nil {
			out, key = t.Outputs, t.Key
		}
	}
	if out == nil {
		return fmt.Errorf("%w: job %s has no outputs of %s replica %d", api.ErrNotFound, id, task, replica)
	}
	if n.data == nil {
		return errors.New("this node keeps no data")
	}
	var holders []string
	for _, h := range out.Holders {
		holders = append(holders, string(h))
	}
	m, err := n.data.FetchFor(ctx, out.Manifest, market.DataKey(key), holders)
	if err != nil {
		return fmt.Errorf("outputs of %s replica %d: %w", task, replica, err)
	}
	tmp, err := os.MkdirTemp(n.cfg.DataDir, ".ui-outputs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	files := filepath.Join(tmp, "files")
	if err := checkpoint.Restore(ctx, m, files, readOnlyChunks{n.data.Store()}); err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err = filepath.WalkDir(files, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == files {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(files, p)
		hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// readOnlyChunks is the data store as a checkpoint.ChunkStore that only
// reads: restoring outputs for a download changes nothing kept.
type readOnlyChunks struct {
	st interface {
		Has(id string) (bool, error)
		Get(id string) ([]byte, bool, error)
	}
}

func (r readOnlyChunks) Has(id string) (bool, error)         { return r.st.Has(id) }
func (r readOnlyChunks) Get(id string) ([]byte, bool, error) { return r.st.Get(id) }
func (readOnlyChunks) Put(string, []byte) error              { return errors.New("read only") }
func (readOnlyChunks) Delete(string) error                   { return errors.New("read only") }
