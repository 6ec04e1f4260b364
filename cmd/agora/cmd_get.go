package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

func init() {
	register("get", "fetch a job's outputs, from whichever peers hold them", cmdGet)
}

// getTimeout bounds the node's fetch of a job's outputs from its peers.
const getTimeout = 30 * time.Minute

func cmdGet(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("get", stdout, stderr)
	apiAddr := apiFlag(fs)
	cred := credentialFlag(fs)
	task := fs.String("task", "", "only this task's outputs")
	replica := fs.Int("replica", -1, "only this replica's outputs (default: every replica)")
	out := fs.String("out", ".", "the directory to put them in; with several task replicas, each goes in DIR/TASK/REPLICA")
	asJSON := fs.Bool("json", false, "print what was fetched as JSON: per task replica its manifest, bytes and directory")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "get", stderr); code != exitOK {
		return code
	}
	job, ok := onlyArg("get", "JOB", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	c := newClient(*apiAddr)
	c.http = &http.Client{Timeout: getTimeout}
	q := url.Values{}
	if *task != "" {
		q.Set("task", *task)
	}
	if *replica >= 0 {
		q.Set("replica", strconv.Itoa(*replica))
	}
	var refs []api.OutputRef
	path := jobPath(job, "/outputs")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	if err := c.do("GET", path, nil, &refs); err != nil {
		fmt.Fprintf(stderr, "agora get: %v\n", err)
		return exitFailed
	}
	if len(refs) == 0 {
		fmt.Fprintf(stderr, "agora get: job %s has no outputs (yet) for that selection\n", job)
		return exitFailed
	}
	var progress io.Writer
	if isTerminal(stderr) {
		progress = stderr
	}
	var got []fetched
	for _, r := range refs {
		dest := *out
		if len(refs) > 1 {
			dest = filepath.Join(*out, r.Task, strconv.Itoa(r.Replica))
		}
		if err := getOutputs(c, r, dest, progress); err != nil {
			fmt.Fprintf(stderr, "agora get: %s replica %d: %v\n", r.Task, r.Replica, err)
			return exitFailed
		}
		if *asJSON {
			got = append(got, fetched{Task: r.Task, Replica: r.Replica, Manifest: r.Manifest, Bytes: r.Bytes, Dir: dest})
			continue
		}
		fmt.Fprintf(stdout, "%s/%d: %s in %s\n", r.Task, r.Replica, resource.FormatSize(r.Bytes), dest)
	}
	if *asJSON {
		printJSON(stdout, got)
	}
	return exitOK
}

// fetched is one task replica's outputs in get --json.
type fetched struct {
	Task     string `json:"task"`
	Replica  int    `json:"replica"`
	Manifest string `json:"manifest"`
	Bytes    int64  `json:"bytes"`
	Dir      string `json:"dir"`
}

// getOutputs reads one manifest and its chunks from the node, checking
// every hash, and puts its entries in dest, replacing entries of the
// same names there and leaving the rest of dest alone.
func getOutputs(c *client, r api.OutputRef, dest string, progress io.Writer) error {
	var raw json.RawMessage
	if err := c.send("GET", "/v1/data/manifests/"+r.Manifest, "", nil, &raw); err != nil {
		return err
	}
	if checkpoint.ID(raw) != r.Manifest {
		return errors.New("the manifest the node sent does not hash to its ID")
	}
	m, err := checkpoint.DecodeManifest(raw)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dest, ".agora-get-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cs := &dirStore{dir: filepath.Join(tmp, "chunks")}
	if err := os.Mkdir(cs.dir, 0o700); err != nil {
		return err
	}
	var got int64
	last := time.Now()
	for _, id := range m.ChunkIDs() {
		if ok, _ := cs.Has(id); ok {
			continue
		}
		var b json.RawMessage
		if err := c.send("GET", "/v1/data/chunks/"+id, "", nil, &b); err != nil {
			return err
		}
		if err := cs.Put(id, b); err != nil {
			return err
		}
		got += int64(len(b))
		if progress != nil && time.Since(last) > 200*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(progress, "\rfetching %s/%d: %s of %s", r.Task, r.Replica, resource.FormatSize(got), resource.FormatSize(m.TotalBytes))
		}
	}
	if progress != nil && got > 0 {
		fmt.Fprintln(progress)
	}
	files := filepath.Join(tmp, "files")
	if err := checkpoint.Restore(context.Background(), m, files, cs); err != nil {
		return err
	}
	entries, err := os.ReadDir(files)
	if err != nil {
		return err
	}
	for _, e := range entries {
		to := filepath.Join(dest, e.Name())
		if err := os.RemoveAll(to); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(files, e.Name()), to); err != nil {
			return err
		}
	}
	return nil
}

// dirStore is a chunk store in a directory, one file per chunk.
type dirStore struct{ dir string }

func (d *dirStore) Has(id string) (bool, error) {
	_, err := os.Stat(filepath.Join(d.dir, id))
	return err == nil, nil
}

func (d *dirStore) Put(id string, b []byte) error {
	if len(id) != 64 || checkpoint.ID(b) != id {
		return fmt.Errorf("chunk %.12s…: the bytes sent do not hash to its ID", id)
	}
	return os.WriteFile(filepath.Join(d.dir, id), b, 0o600)
}

func (d *dirStore) Get(id string) ([]byte, bool, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (d *dirStore) Delete(id string) error { return os.Remove(filepath.Join(d.dir, id)) }
