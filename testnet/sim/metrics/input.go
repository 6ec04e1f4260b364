package metrics

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// Input is what a finished simulation hands to Compute. Times are
// offsets from the simulation's start.
type Input struct {
	// Scheduler names the scheduler that ran, for the report.
	Scheduler string
	// UsageBytes are the bytes of fair-share usage summaries the nodes
	// received (each summary's JSON once per receiver).
	UsageBytes int64
	// Nodes is the capacity of every node of the cluster.
	Nodes []resource.Vector
	// Jobs are the jobs submitted, each with the records of its tasks.
	Jobs []JobRecord
	// Predictions pair runtimes predicted and estimated with the actual
	// ones, one per finished task (or per job, as the scheduler
	// predicts); see Prediction.
	Predictions []Prediction
	// Messages and Bytes count what the scheduler sent over the network.
	Messages, Bytes int64
	// Wall is how long the simulation took in real time.
	Wall time.Duration
	// End is when the simulation stopped. Tasks started and not finished
	// count as running until End; makespan runs to End when it is later
	// than the last finish. Zero means the last finish.
	End time.Duration
	// Faults counts what node failures, churn and message loss cost.
	Faults Faults
	// Skipped counts the workload's records that were not replayed (an
	// SWF job wider than the machine, one cancelled before it started),
	// SkipReasons by reason.
	Skipped     int
	SkipReasons map[string]int
	// Measure, when its To is after its From, is the measurement window:
	// the job figures count only the jobs submitted in [From, To), and
	// the busy fractions are over that window, so that a run's warm-up
	// and drain do not dilute a loaded period. Every job still runs.
	Measure Window
}

// Window is an interval of simulated time, [From, To).
type Window struct {
	From, To time.Duration
}

// set reports whether w is a window at all.
func (w Window) set() bool { return w.To > w.From }

// measured reports whether a job submitted at submit is measured.
func (in Input) measured(submit time.Duration) bool {
	return !in.Measure.set() || (submit >= in.Measure.From && submit < in.Measure.To)
}

// Faults counts what node failures, churn and message loss cost a run.
type Faults struct {
	// NodeFailures is how many times a node failed.
	NodeFailures int
	// TasksRestarted counts the task runs cut short by a node failure or
	// a node leaving, to be run again; LostWork is the task-time they had
	// run, thrown away.
	TasksRestarted int
	LostWork       time.Duration
	// DuplicateRuns counts runs of a replica started while another run
	// of it was in flight or after it had finished.
	DuplicateRuns int
	// MessagesLost counts the market messages the network dropped.
	MessagesLost int64
}

// JobRecord is one job of the simulation.
type JobRecord struct {
	ID   string
	User string
	// Class is the job's type, for the per-class breakdown.
	Class string
	// Tasks holds a record per task replica.
	Tasks []TaskRecord
	// RecordedWait is the wait the trace records for the job in its own
	// production schedule, when Recorded (SWF logs).
	RecordedWait time.Duration
	Recorded     bool
}

// TaskRecord is one replica of one task: what it asked for and when it
// was submitted, started and finished. A task that became ready after
// its dependencies has its own Submit (the job's submit is the earliest).
type TaskRecord struct {
	// Name is the task's name within the job; Replica numbers its copies.
	Name    string
	Replica int
	// After names the tasks this one waited for; it shapes the job's
	// critical path (see JobTimes).
	After []string
	// Request is what the replica held while it ran.
	Request resource.Request
	// Submit is when the task was submitted; Start and Finish are when it
	// started and finished, and count only when Started and Finished are
	// set. A task that ran more than once (after a node failed) records
	// its last start.
	Submit, Start, Finish time.Duration
	Started, Finished     bool
}

// Prediction pairs one task's actual runtime with the runtime the
// scheduler predicted for it and the user's estimate. A zero Predicted or
// Estimate means there was none, and the pair is left out of that error.
type Prediction struct {
	Job, Task string
	Predicted time.Duration
	Estimate  time.Duration
	Actual    time.Duration
}

// gpuMilli is the share of GPUs a request holds, in thousandths of a GPU.
func gpuMilli(r resource.Request) int64 {
	if r.GPU.Count > 0 {
		return int64(r.GPU.Count) * resource.WholeGPU
	}
	return r.GPU.Share
}

// capacity sums the nodes' CPU (millicores) and GPUs (thousandths).
func capacity(nodes []resource.Vector) (cpu, gpu int64) {
	for _, n := range nodes {
		cpu += n.CPU
		gpu += int64(len(n.GPUs)) * resource.WholeGPU
	}
	return cpu, gpu
}
