package market

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// TestInputsResolvedAtAward: a task's outputs, reported with its
// success, are kept in its record; a dependent task is awarded with
// each input resolved to the producer's manifest and holders (every
// replica's, under its index, for replica: all), and an uploaded input
// to the peers closest to it.
func TestInputsResolvedAtAward(t *testing.T) {
	c := newCluster(t, cpuNode(4), cpuNode(4), cpuNode(4))
	manifest := func(k TaskKey) string {
		return strings.Repeat(string("0123456789abcdef"[k.Replica]), 64)
	}
	c.outputs = func(s TaskSpec, id NodeID) *DataRef {
		return &DataRef{Manifest: manifest(s.Key), Bytes: 42, Holders: []NodeID{id, "elsewhere"}}
	}
	got := map[string][]InputRef{}
	c.run = func(s TaskSpec, _ NodeID) (int, time.Duration) {
		got[s.Key.Task] = s.Inputs
		return 0, time.Second
	}
	upload := strings.Repeat("e", 64)
	prep := task("prep", 1000)
	prep.Outputs = []spec.Output{{Path: "out.bin"}}
	shards := task("shards", 1000)
	shards.Replicas, shards.Outputs = 2, []spec.Output{{Path: "res"}}
	train := task("train", 1000, "prep", "shards")
	train.Inputs = []spec.Input{
		{From: "prep", Output: "out.bin", Path: "in.bin"},
		{From: "shards", Replica: spec.AllReplicas, Path: "all"},
		{From: "shards", Output: "res", Replica: 1, Path: "one"},
		{Data: upload, Name: "./params.json", Path: "params.json"},
	}
	c.submit(0, "j", job("j", prep, shards, train))
	c.until(time.Minute, "the job to end", func() bool { return c.job(0, "j").State.Terminal() })
	j := c.job(0, "j")
	if j.State != JobSucceeded {
		t.Fatalf("job %s: %s", j.State, j.Reason)
	}
	var prepRef DataRef
	for _, tr := range j.Tasks {
		if tr.Key.Task == "prep" {
			if tr.Outputs == nil || tr.Outputs.Manifest != manifest(tr.Key) || tr.Outputs.Holders[0] != tr.Node {
				t.Fatalf("prep's record holds outputs %+v", tr.Outputs)
			}
			prepRef = *tr.Outputs
		}
		if tr.Key.Task == "train" && tr.Outputs != nil {
			t.Fatalf("train declares no outputs, yet its record holds %+v", tr.Outputs)
		}
	}
	in := got["train"]
	if len(in) != 5 {
		t.Fatalf("train got %d inputs: %+v", len(in), in)
	}
	if !reflect.DeepEqual(in[0], InputRef{Input: 0, DataRef: prepRef, Select: "out.bin", Path: "in.bin"}) {
		t.Errorf("input from prep: %+v", in[0])
	}
	for r, want := range []string{"all/0", "all/1"} {
		if x := in[1+r]; x.Input != 1 || x.Path != want || x.Manifest != manifest(TaskKey{Replica: r}) || x.Select != "" {
			t.Errorf("shards replica %d: %+v", r, x)
		}
	}
	if x := in[3]; x.Input != 2 || x.Path != "one" || x.Select != "res" || x.Manifest != manifest(TaskKey{Replica: 1}) {
		t.Errorf("shards replica 1's res: %+v", x)
	}
	if x := in[4]; x.Input != 3 || !x.Upload || x.Manifest != upload || x.Path != "params.json" || len(x.Holders) != 3 || x.Holders[0] != "n0" {
		t.Errorf("upload: %+v", x)
	}
	if len(got["prep"]) != 0 {
		t.Errorf("prep has no inputs, got %+v", got["prep"])
	}
}

// TestLocalityPrefersHolder: of two idle nodes, the one that holds a
// task's 50 MiB input wins its auction: its bid starts sooner (no
// transfer) and scores higher.
func TestLocalityPrefersHolder(t *testing.T) {
	const runs = 20
	holder := map[string]NodeID{} // manifest → who holds it
	c := newClusterWith(t, func(i int, cfg *Config) {
		self := cfg.Self
		cfg.Holds = func(m string) bool { return holder[m] == self }
	}, cpuNode(4), cpuNode(4))
	ran := map[string]NodeID{}
	c.run = func(s TaskSpec, id NodeID) (int, time.Duration) {
		ran[s.Key.Job+"/"+s.Key.Task] = id
		return 0, time.Second
	}
	c.outputs = func(s TaskSpec, id NodeID) *DataRef {
		m := fmt.Sprintf("%064x", len(holder)+1)
		holder[m] = NodeID([]string{"n1", "n0"}[len(holder)%2])
		return &DataRef{Manifest: m, Bytes: 50 << 20, Holders: []NodeID{holder[m]}}
	}
	local := 0
	for r := range runs {
		prep := task("prep", 1000)
		prep.Outputs = []spec.Output{{Path: "out.bin"}}
		use := task("use", 1000, "prep")
		use.Inputs = []spec.Input{{From: "prep", Output: "out.bin", Path: "in.bin"}}
		id := fmt.Sprintf("j%02d", r)
		c.submit(r%2, id, job(id, prep, use))
		c.until(time.Minute, "job "+id, func() bool { return c.job(r%2, id).State.Terminal() })
		j := c.job(r%2, id)
		if j.State != JobSucceeded {
			t.Fatalf("%s: %s", j.State, j.Reason)
		}
		if m := j.Tasks[0].Outputs.Manifest; ran[id+"/use"] == holder[m] {
			local++
		}
	}
	if local < runs {
		t.Fatalf("the task ran where its input was in %d of %d runs", local, runs)
	}
}

// TestImageHolderWins (issue 45): between two otherwise equal nodes, an
// image task goes to the one that holds its image (Config.Holds answers
// for images by ImageManifest, as the node's does), whichever node
// manages the job and whether or not the image's size is known; a node
// whose disk cannot take the image does not bid.
func TestImageHolderWins(t *testing.T) {
	id := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name   string
		size   int64
		holder NodeID
	}{{"sized, n1 holds", 300 << 20, "n1"}, {"sized, n0 holds", 300 << 20, "n0"}, {"size unknown", 0, "n1"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, func(i int, cfg *Config) {
				self := cfg.Self
				cfg.Labels = map[string]string{spec.ContainerLabel: "yes"}
				cfg.Holds = func(m string) bool { return m == ImageManifest(id) && self == tc.holder }
			}, cpuNode(4), cpuNode(4))
			ran := map[string]NodeID{}
			c.run = func(s TaskSpec, node NodeID) (int, time.Duration) {
				if s.ImageID != id {
					t.Errorf("%s ran with image ID %q", s.Key, s.ImageID)
				}
				ran[s.Key.Job] = node
				return 0, time.Second
			}
			for r := range 10 {
				tk := task("boxed", 1000)
				tk.Image, tk.ImageID, tk.ImageSize = "localhost/demo/busybox:1", id, tc.size
				tk.RequireContainer()
				jid := fmt.Sprintf("j%02d", r)
				c.submit(r%2, jid, job(jid, tk))
				c.until(time.Minute, "job "+jid, func() bool { return c.job(r%2, jid).State.Terminal() })
				if j := c.job(r%2, jid); j.State != JobSucceeded {
					t.Fatalf("%s: %s", j.State, j.Reason)
				}
				if ran[jid] != tc.holder {
					t.Fatalf("run %d (managed by n%d) ran on %s, not on %s, which holds the image", r, r%2, ran[jid], tc.holder)
				}
			}
		})
	}
}

// TestInputsMustFit: a node whose free disk cannot take a task's inputs
// declines it, saying so; one that holds them already need not.
func TestInputsMustFit(t *testing.T) {
	small := cpuNode(4)
	small.Disk = 10 << 20
	c := newClusterWith(t, func(i int, cfg *Config) {
		cfg.Holds = func(string) bool { return false }
	}, small, cpuNode(4))
	c.outputs = func(s TaskSpec, id NodeID) *DataRef {
		return &DataRef{Manifest: strings.Repeat("7", 64), Bytes: 50 << 20, Holders: []NodeID{id}}
	}
	prep := task("prep", 1000)
	prep.Outputs = []spec.Output{{Path: "out.bin"}}
	use := task("use", 1000, "prep")
	use.Inputs = []spec.Input{{From: "prep", Output: "out.bin", Path: "in.bin"}}
	c.submit(0, "j", job("j", prep, use))
	c.until(time.Minute, "the job to end", func() bool { return c.job(0, "j").State.Terminal() })
	for _, tr := range c.job(0, "j").Tasks {
		if tr.Key.Task == "use" && tr.Node != "n1" {
			t.Fatalf("use ran on %s, whose 10 MiB disk cannot take its 50 MiB input", tr.Node)
		}
	}
}

// TestCandidatesPreferHolders: a manager calls first the nodes whose
// adverts say they hold a task's inputs: the others' expected wait
// includes moving the data.
func TestCandidatesPreferHolders(t *testing.T) {
	m, err := New(Config{Self: "self", Capacity: cpuNode(0), D: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Repeat("5", 64)
	for _, id := range []NodeID{"a", "b", "c", "d"} {
		p := Peer{ID: id, Capacity: cpuNode(4), Free: cpuNode(4)}
		if id == "c" {
			p.Holds = []string{strings.Repeat("6", 64), in}
		}
		m.Advert(t0, p)
	}
	for range 5 {
		cands := m.auc.candidates(TaskOffer{Request: resource.Request{CPU: 1000}, Inputs: []DataRef{{Manifest: in, Bytes: 50 << 20}}}, nil)
		if len(cands) != 4 || cands[0].id != "c" {
			t.Fatalf("candidates %+v: want c, which holds the input, first", cands)
		}
	}
}

// TestJobDataLimit: the success whose outputs take a job past its data
// limit fails the job, naming the limit, without retries.
func TestJobDataLimit(t *testing.T) {
	c := newClusterWith(t, func(_ int, cfg *Config) { cfg.JobDataLimit = 100 << 20 }, cpuNode(4))
	c.outputs = func(s TaskSpec, id NodeID) *DataRef {
		return &DataRef{Manifest: fmt.Sprintf("%064x", len(s.Key.Task)), Bytes: 60 << 20, Holders: []NodeID{id}}
	}
	a, b := task("a", 1000), task("bb", 1000, "a")
	a.Outputs, b.Outputs = []spec.Output{{Path: "x"}}, []spec.Output{{Path: "y"}}
	c.submit(0, "j", job("j", a, b))
	c.until(time.Minute, "the job to end", func() bool { return c.job(0, "j").State.Terminal() })
	j := c.job(0, "j")
	if j.State != JobFailed || !strings.Contains(j.Reason, "task bb: the job's outputs would hold 125829120 bytes, over the limit of 104857600 per job") {
		t.Fatalf("job %s: %s", j.State, j.Reason)
	}
	if n := len(c.starts); n != 2 {
		t.Fatalf("%d attempts started, want 2 (no retry)", n)
	}
}

// TestSignedInputs: in a network with an authority an executor takes an
// award's inputs only as the signed job places them; a manager cannot
// place other data, elsewhere, or another upload.
func TestSignedInputs(t *testing.T) {
	up := strings.Repeat("a", 64)
	ts := &spec.Task{Name: "train", Inputs: []spec.Input{
		{From: "prep", Output: "out.bin", Path: "in.bin"},
		{From: "shards", Replica: spec.AllReplicas, Path: "all"},
		{Data: up, Path: "params.json"},
	}}
	out := DataRef{Manifest: strings.Repeat("b", 64)}
	good := []InputRef{
		{Input: 0, DataRef: out, Select: "out.bin", Path: "in.bin"},
		{Input: 1, DataRef: out, Path: "all/0"},
		{Input: 1, DataRef: out, Path: "all/1"},
		{Input: 2, DataRef: DataRef{Manifest: up}, Upload: true, Path: "params.json"},
	}
	if err := signedInputs(ts, good); err != nil {
		t.Fatalf("the signed placement refused: %v", err)
	}
	for _, c := range []struct {
		name string
		ref  InputRef
		want string
	}{
		{"unknown input", InputRef{Input: 3, DataRef: out, Path: "x"}, "input 3 is not in the signed job"},
		{"elsewhere", InputRef{Input: 0, DataRef: out, Select: "out.bin", Path: "run.sh"}, "placed at run.sh"},
		{"not a replica dir", InputRef{Input: 1, DataRef: out, Path: "all/x"}, "placed at all/x"},
		{"another upload", InputRef{Input: 2, DataRef: out, Upload: true, Path: "params.json"}, "not the data the signed job names"},
		{"an upload for outputs", InputRef{Input: 0, DataRef: out, Upload: true, Select: "out.bin", Path: "in.bin"}, "not the data the signed job names"},
		{"another selection", InputRef{Input: 0, DataRef: out, Select: "other", Path: "in.bin"}, `takes "other"`},
	} {
		if err := signedInputs(ts, []InputRef{c.ref}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestInputsUnresolved: a task whose producer succeeded with no outputs
// on record (an executor that keeps none) fails, naming the input,
// instead of starting on missing files.
func TestInputsUnresolved(t *testing.T) {
	c := newCluster(t, cpuNode(4))
	prep := task("prep", 1000)
	prep.Outputs = []spec.Output{{Path: "out.bin"}}
	use := task("use", 1000, "prep")
	use.Inputs = []spec.Input{{From: "prep", Output: "out.bin", Path: "in.bin"}}
	c.submit(0, "j", job("j", prep, use)) // c.outputs unset: no outputs reported
	c.until(time.Minute, "the job to end", func() bool { return c.job(0, "j").State.Terminal() })
	j := c.job(0, "j")
	if j.State != JobFailed || !strings.Contains(j.Reason, "task use cannot start: input 0: task prep replica 0 succeeded with no outputs on record") {
		t.Fatalf("job %s: %s", j.State, j.Reason)
	}
	if len(c.starts) != 1 {
		t.Fatalf("%d starts, want prep's only", len(c.starts))
	}
}
