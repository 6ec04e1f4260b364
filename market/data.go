package market

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

// Data between tasks (docs/data.md): an executor that ran a task with
// outputs stores them as content-addressed chunks under a manifest,
// copies them to DataReplicas peers, and reports the manifest and its
// holders with the success; the manager keeps that in the task's record
// and, when it awards a task with inputs, resolves each into the
// manifests and holders the executor fetches from.

// DataReplicas is how many peers besides its maker keep a copy of a
// task's outputs or of an uploaded input, by default (Config).
const DataReplicas = 2

// MaxDataHolders bounds the holders a data reference names.
const MaxDataHolders = 16

// DataRef names stored data: a manifest (its ID), its bytes, and the
// nodes that hold it, its maker first.
type DataRef struct {
	Manifest string   `json:"manifest"`
	Bytes    int64    `json:"bytes"`
	Holders  []NodeID `json:"holders,omitempty"`
}

// InputRef is one input an executor places before the task starts:
// the manifest to fetch (from Holders first), what of it to take and
// where to put it.
type InputRef struct {
	// Input is the index of the spec input it comes from.
	Input int `json:"input"`
	DataRef
	// Select is the path inside the manifest to place: one output, or a
	// path inside an output directory; "" places the whole tree. For an
	// uploaded input (Upload) the manifest's one top-level entry is
	// placed.
	Select string `json:"select,omitempty"`
	Upload bool   `json:"upload,omitempty"`
	// Path is where, relative to the work directory ("." for it).
	Path string `json:"path"`
}

// DataKey is the key whose closest peers keep a copy of a replica's
// outputs (Closest), as checkpoints are kept.
func DataKey(k TaskKey) string {
	return "out/" + k.Job + "/" + k.Task + "/" + strconv.Itoa(k.Replica)
}

// UploadKey is the key whose closest peers keep an uploaded input.
func UploadKey(manifest string) string { return "data/" + manifest }

// inputRefs resolves task ts's inputs for an award: a producer's
// outputs from its record, an upload's holders from the peers closest
// to it. A producer without outputs on record (it cannot be: it
// succeeded before this task was ready) yields no reference; the
// executor then fails the attempt naming the input.
func (au *auctioneer) inputRefs(j *JobRecord, ts *spec.Task) []InputRef {
	var out []InputRef
	for i, in := range ts.Inputs {
		switch {
		case in.Data != "":
			holders := append([]NodeID{au.cfg.Self}, au.closestPeers(UploadKey(in.Data), max(au.cfg.DataReplicas, 0)+1, "")...)
			out = append(out, InputRef{Input: i, DataRef: DataRef{Manifest: in.Data, Holders: holders}, Upload: true, Path: in.Path})
		case in.From != "":
			prod, _ := j.Spec.Task(in.From)
			if prod == nil {
				continue
			}
			for r := range prod.Replicas {
				if in.Replica != spec.AllReplicas && in.Replica != r {
					continue
				}
				t := j.task(TaskKey{Job: j.ID, Task: in.From, Replica: r})
				if t == nil || t.Outputs == nil {
					continue
				}
				p := in.Path
				if in.Replica == spec.AllReplicas {
					p = path.Join(in.Path, strconv.Itoa(r))
				}
				out = append(out, InputRef{Input: i, DataRef: *t.Outputs, Select: in.Output, Path: p})
			}
		}
	}
	return out
}

// inputSizes are a task's inputs for its offer: each manifest once, with
// its bytes.
func (au *auctioneer) inputSizes(j *JobRecord, ts *spec.Task) []DataRef {
	var out []DataRef
	if ts.ImageID != "" {
		// The image is data the node must hold before the task starts:
		// nodes advertise the images they hold beside their manifests.
		// An image of unknown size counts one byte: a holder is still
		// preferred, without a made-up transfer time.
		out = append(out, DataRef{Manifest: ImageManifest(ts.ImageID), Bytes: max(ts.ImageSize, 1)})
	}
	if len(ts.Inputs) == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, r := range au.inputRefs(j, ts) {
		if !seen[r.Manifest] {
			seen[r.Manifest] = true
			out = append(out, DataRef{Manifest: r.Manifest, Bytes: r.Bytes})
		}
	}
	return out
}

// ImageManifest is the name an image with ID id goes by among manifests
// (Config.Holds, adverts' Holds): its config digest in hex, as a
// manifest ID is the hex of its digest.
func ImageManifest(id string) string { return strings.TrimPrefix(id, "sha256:") }

// heldInputs sums the bytes of the inputs this node holds, and of all.
func (au *auctioneer) heldInputs(in []DataRef) (held, total int64) {
	for _, d := range in {
		total += d.Bytes
	}
	return total - lacking(in, au.cfg.Holds), total
}

// transferTime is how long moving n bytes takes at Config.DataRate.
func (au *auctioneer) transferTime(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(n) / float64(au.cfg.DataRate) * float64(time.Second))
}

// lacking is the bytes of inputs a node does not hold (holds nil: none).
func lacking(inputs []DataRef, holds func(string) bool) int64 {
	var n int64
	for _, d := range inputs {
		if holds == nil || !holds(d.Manifest) {
			n += d.Bytes
		}
	}
	return n
}

// holds reports whether the peer's advert lists manifest id.
func (p *Peer) holds(id string) bool {
	for _, h := range p.Holds {
		if h == id {
			return true
		}
	}
	return false
}

// overDataLimit says why a success's outputs take the job past
// Config.JobDataLimit, or "": the job's outputs are then failed whole,
// not retried, since another attempt would make as much.
func (au *auctioneer) overDataLimit(j *JobRecord, out *DataRef) string {
	if au.cfg.JobDataLimit <= 0 || out == nil {
		return ""
	}
	total := out.Bytes
	for i := range j.Tasks {
		if o := j.Tasks[i].Outputs; o != nil {
			total += o.Bytes
		}
	}
	if total <= au.cfg.JobDataLimit {
		return ""
	}
	return fmt.Sprintf("the job's outputs would hold %d bytes, over the limit of %d per job", total, au.cfg.JobDataLimit)
}

// signedInputs checks an award's inputs against the signed task: each
// names one of its inputs, is placed where that input says (under the
// replica's index for replica: all), takes what it selects, and an
// upload is the very data the user signed. Which manifest a producer's
// outputs are is the manager's word: no signature covers it.
func signedInputs(ts *spec.Task, refs []InputRef) error {
	for _, r := range refs {
		if r.Input < 0 || r.Input >= len(ts.Inputs) {
			return fmt.Errorf("task %s: input %d is not in the signed job", ts.Name, r.Input)
		}
		in := ts.Inputs[r.Input]
		okPath := r.Path == in.Path
		if in.Replica == spec.AllReplicas {
			dir, rep := path.Split(r.Path)
			_, err := strconv.Atoi(rep)
			okPath = err == nil && path.Clean(dir) == path.Clean(in.Path)
		}
		switch {
		case !okPath:
			return fmt.Errorf("task %s: input %d placed at %s, the signed job says %s", ts.Name, r.Input, r.Path, in.Path)
		case r.Upload != (in.Data != ""), in.Data != "" && r.Manifest != in.Data:
			return fmt.Errorf("task %s: input %d is not the data the signed job names", ts.Name, r.Input)
		case in.From != "" && r.Select != in.Output:
			return fmt.Errorf("task %s: input %d takes %q, the signed job says %q", ts.Name, r.Input, r.Select, in.Output)
		}
	}
	return nil
}

// inputLack is a ready replica an input of which cannot be resolved.
type inputLack struct {
	j   *JobRecord
	t   *TaskRecord
	why string
}

// unresolved says why a ready replica's inputs cannot all be resolved
// (a producer replica that succeeded with no outputs on record: an
// executor that does not keep outputs), or "". Started without them, the
// task would run on missing files.
func (au *auctioneer) unresolved(j *JobRecord, t *TaskRecord) string {
	ts, _ := j.Spec.Task(t.Key.Task)
	if ts == nil {
		return ""
	}
	for i, in := range ts.Inputs {
		prod, _ := j.Spec.Task(in.From)
		if prod == nil {
			continue
		}
		for r := range prod.Replicas {
			if in.Replica != spec.AllReplicas && in.Replica != r {
				continue
			}
			if p := j.task(TaskKey{Job: j.ID, Task: in.From, Replica: r}); p != nil && p.State == TaskSucceeded && p.Outputs == nil {
				return fmt.Sprintf("input %d: task %s replica %d succeeded with no outputs on record", i, in.From, r)
			}
		}
	}
	return ""
}

// failLacking fails a replica whose inputs cannot be had, and its job.
func (au *auctioneer) failLacking(l inputLack) {
	if l.j.State.Terminal() || l.t.State != TaskPending {
		return
	}
	au.move(l.j, l.t, change{ev: evFail, exit: -1, reason: l.why})
	full := fmt.Sprintf("task %s cannot start: %s", l.t.Key.Task, l.why)
	au.event(l.j.ID, full)
	au.mgr.endJob(l.j, JobFailed, full)
}
