package spec

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// Job is a validated, normalized job: what the market core schedules.
// Defaults are already applied, sizes are in bytes and CPU in millicores.
type Job struct {
	// Name is the user's name for the job.
	Name string `json:"name"`
	// Type is the job class that keys the runtime-prediction history;
	// Parse sets it to Name when the spec gives none.
	Type string `json:"type"`
	// Priority runs from MinPriority to MaxPriority; higher runs sooner.
	Priority int `json:"priority"`
	// Deadline is when the job should be finished; the zero time means none.
	Deadline time.Time `json:"deadline,omitzero"`
	// PendingTimeout is how long a task replica may wait for a node that
	// could hold it before the job fails; zero means the node's default
	// (--scheduling-timeout), which by default waits for such a node —
	// an edge site that joins later, say.
	PendingTimeout time.Duration `json:"pending_timeout_ns,omitempty"`
	// Tasks are the job's tasks in spec order.
	Tasks []Task `json:"tasks"`
}

// Task is one node of a job's dependency graph.
type Task struct {
	// Name is unique within the job and matches [A-Za-z0-9_.-]{1,64}.
	Name string `json:"name"`
	// Command is the argv to run; a spec's shell string becomes
	// ["sh", "-c", string].
	Command []string `json:"command"`
	// Env holds extra environment variables for the task.
	Env map[string]string `json:"env,omitempty"`
	// Request is what one replica of the task needs of its node.
	Request resource.Request `json:"request"`
	// After names the tasks that must finish before this one starts.
	After []string `json:"after,omitempty"`
	// Estimate is the user's runtime estimate; zero means none.
	Estimate time.Duration `json:"estimate_ns,omitempty"`
	// Timeout bounds one run of the task; zero means none.
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	// CheckpointInterval is how often the task checkpoints; zero means it
	// does not.
	CheckpointInterval time.Duration `json:"checkpoint_interval_ns,omitempty"`
	// Retries is how many times a failed run is retried.
	Retries int `json:"retries"`
	// Replicas is how many copies of the task run.
	Replicas int `json:"replicas"`
	// Array, when set, makes the task an array (array.go): one replica
	// per index of the expression, Replicas of them, each told its index.
	Array string `json:"array,omitempty"`
	// ArrayValues, with Array, are its elements' parameters: replica r
	// is told ArrayValues[r] (AGORA_ARRAY_VALUE) beside its index.
	ArrayValues []string `json:"array_values,omitempty"`
	// Gang says the replicas must start together.
	Gang bool `json:"gang,omitempty"`
	// Pack says the replicas of a gang may share a node.
	Pack bool `json:"pack,omitempty"`
	// Outputs are kept when the task succeeds; Inputs are placed in its
	// work directory before it starts (docs/data.md).
	Outputs []Output `json:"outputs,omitempty"`
	Inputs  []Input  `json:"inputs,omitempty"`
	// Image, when set, is the OCI image the task runs in, through the
	// node's podman or docker (docs/containers.md); its Request then
	// carries the label ContainerLabel, which only nodes with a working
	// engine advertise. ImageID pins it: the image's ID ("sha256:" and
	// 64 hex digits, the digest of its config), which the node that
	// accepts the job fills in when the submitter did not, and which a
	// node checks before running the task.
	Image   string `json:"image,omitempty"`
	ImageID string `json:"image_id,omitempty"`
	// ImageSize is the image's size in bytes, filled in with ImageID: a
	// hint for placement (a node lacking the image must fetch it first)
	// and for the disk a node needs. Untrusted: it only moves predictions.
	ImageSize int64 `json:"image_size,omitempty"`
}

// ContainerLabel is the node label an image task requires: nodes whose
// engine works advertise it with the value "yes".
const ContainerLabel = resource.ContainerLabel

// ContainerGPULabel is "no" on a node whose GPUs failed the start-up
// check for containers.
const ContainerGPULabel = resource.ContainerGPULabel

// Task returns the task with the given name and true, or nil and false if
// the job has none. The pointer refers into j.Tasks.
func (j *Job) Task(name string) (*Task, bool) {
	for i := range j.Tasks {
		if j.Tasks[i].Name == name {
			return &j.Tasks[i], true
		}
	}
	return nil, false
}
