package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// Local inputs (docs/data.md): before a job leaves the client, each
// `local: PATH` input is chunked, the chunks the node lacks uploaded, its
// manifest kept (and copied to the node's peers), and the input rewritten
// to `data: ID, name: PATH`. Paths are relative to the spec file's
// directory.

// MaxUploadBytes bounds one local input: what one manifest may list.
const MaxUploadBytes = checkpoint.MaxTotalBytes

// badInput is a local input the client refuses to upload.
type badInput string

func (e badInput) Error() string { return string(e) }

// uploadInputs uploads the local inputs of the spec in data, read from a
// file in dir, and returns the spec rewritten to name what was uploaded
// (as YAML), or data itself when it has none.
func uploadInputs(c *client, data []byte, dir string, progress io.Writer) ([]byte, error) {
	js, err := spec.Parse(data, time.Now())
	if err != nil || len(js.LocalInputs()) == 0 {
		return data, err
	}
	// Every size is checked before any byte leaves.
	sizes := map[string]int64{}
	for _, t := range js.Tasks {
		for i, in := range t.Inputs {
			if in.Local == "" {
				continue
			}
			p := localPath(dir, in.Local)
			n, err := treeSize(p)
			if err != nil {
				return nil, badInput(fmt.Sprintf("task %s input %d: %v", t.Name, i, err))
			}
			if n > MaxUploadBytes {
				return nil, badInput(fmt.Sprintf("task %s input %d: %s holds %s, over the limit of %s per input; nothing was uploaded",
					t.Name, i, in.Local, resource.FormatSize(n), resource.FormatSize(MaxUploadBytes)))
			}
			sizes[p] = n
		}
	}
	// The node answers an upload once its copies are made: give it time.
	c.http = &http.Client{Timeout: getTimeout}
	ids := map[string]string{}
	for p, n := range sizes {
		id, err := upload(c, p, n, progress)
		if err != nil {
			return nil, fmt.Errorf("upload %s: %w", p, err)
		}
		ids[p] = id
	}
	return rewriteLocals(data, func(local string) string { return ids[localPath(dir, local)] })
}

func localPath(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// treeSize is the bytes of the regular files at p (symlinks not followed).
func treeSize(p string) (int64, error) {
	var n int64
	err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// upload sends what the node lacks of p and keeps its manifest there.
func upload(c *client, p string, total int64, progress io.Writer) (string, error) {
	up := &uploader{c: c, name: filepath.Base(p), total: total, progress: progress}
	m, _, err := checkpoint.SnapshotPaths(filepath.Dir(p), []string{filepath.Base(p)},
		checkpoint.Meta{Job: "upload", Task: "input", Created: time.Now()}, up)
	if err != nil {
		return "", err
	}
	if len(m.Skipped) > 0 {
		return "", fmt.Errorf("%s: %s", m.Skipped[0].Path, m.Skipped[0].Reason)
	}
	raw, err := checkpoint.EncodeManifest(m)
	if err != nil {
		return "", err
	}
	var r api.UploadResponse
	if err := c.send("POST", "/v1/data/manifests", "application/json", raw, &r); err != nil {
		return "", err
	}
	up.done()
	return r.ID, nil
}

// uploader is the chunk store a local input is snapshotted into: the
// node's, over the API.
type uploader struct {
	c        *client
	name     string
	total    int64
	sent     int64
	seen     int64
	progress io.Writer // nil: quiet
	last     time.Time
}

func (u *uploader) Has(id string) (bool, error) {
	var r api.MissingResponse
	if err := u.c.do("POST", "/v1/data/missing", api.MissingRequest{IDs: []string{id}}, &r); err != nil {
		return false, err
	}
	return len(r.Missing) == 0, nil
}

func (u *uploader) Put(id string, b []byte) error {
	if err := u.c.send("PUT", "/v1/data/chunks/"+id, "application/octet-stream", b, nil); err != nil {
		return err
	}
	u.sent += int64(len(b))
	u.seen += int64(len(b))
	u.show()
	return nil
}

func (u *uploader) Get(string) ([]byte, bool, error) {
	return nil, false, errors.New("upload: no reads")
}
func (u *uploader) Delete(string) error { return nil }

func (u *uploader) show() {
	if u.progress == nil || time.Since(u.last) < 200*time.Millisecond {
		return
	}
	u.last = time.Now()
	fmt.Fprintf(u.progress, "\ruploading %s: %s of %s", u.name, resource.FormatSize(u.seen), resource.FormatSize(u.total))
}

func (u *uploader) done() {
	if u.progress != nil && !u.last.IsZero() {
		fmt.Fprintf(u.progress, "\ruploaded %s: %s (%s sent)\n", u.name, resource.FormatSize(u.total), resource.FormatSize(u.sent))
	}
}

// rewriteLocals replaces each input's `local: PATH` by `data: ID` and
// `name: PATH` in the spec's YAML tree (JSON is YAML).
func rewriteLocals(data []byte, idOf func(local string) string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("spec: want one document")
	}
	tasks := field(doc.Content[0], "tasks")
	if tasks == nil {
		return data, nil
	}
	for _, t := range tasks.Content {
		inputs := field(t, "inputs")
		if inputs == nil {
			continue
		}
		for _, in := range inputs.Content {
			if in.Kind != yaml.MappingNode {
				continue
			}
			for k := 0; k+1 < len(in.Content); k += 2 {
				key, val := in.Content[k], in.Content[k+1]
				if key.Value != "local" {
					continue
				}
				id := idOf(val.Value)
				if id == "" {
					return nil, fmt.Errorf("input %s was not uploaded", val.Value)
				}
				name := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val.Value}
				key.Value, val.Value, val.Tag, val.Style = "data", id, "!!str", 0
				in.Content = append(in.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, name)
				break
			}
		}
	}
	return yaml.Marshal(&doc)
}

// field is the value of key in mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Value == key {
			v := n.Content[k+1]
			for v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

// terminal reports whether w is a terminal, for progress lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && !strings.EqualFold(os.Getenv("TERM"), "dumb")
}
