package workload

import (
	"fmt"
	"sort"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// Job is one job of a workload: who submitted it and when, what it asks
// for, and how long each of its tasks truly runs.
type Job struct {
	// ID is unique within the workload.
	ID string
	// User is who submitted the job; fairness is measured over users.
	User string
	// Submit is the job's submit time as an offset from the trace start.
	Submit time.Duration
	// Spec is the job as the market sees it: tasks, requests, the user's
	// estimates. It passes spec.Job.Validate.
	Spec spec.Job
	// Runtimes is the true runtime of one replica of each task, by task
	// name; every task has one, greater than zero. The simulator should
	// reveal it to a scheduler only when the task finishes.
	Runtimes map[string]time.Duration
	// RecordedWait is how long the job waited in the schedule its log
	// records (SWF field 3: the production machine's own scheduler), and
	// Recorded says whether the log records one.
	RecordedWait time.Duration
	Recorded     bool
}

// Workload is a list of jobs in submit order.
type Workload struct {
	// Name says where the workload came from, such as the trace's file
	// name or "synthetic:42".
	Name string
	// Jobs is sorted by Submit, then by ID.
	Jobs []Job
	// Skipped counts the records of the input that were not turned into
	// jobs, such as SWF jobs cancelled before they started or Alibaba
	// pods never scheduled; SkipReasons breaks it down.
	Skipped     int
	SkipReasons map[string]int
	// SWF holds the header of an SWF log, nil for other sources.
	SWF *SWFHeader
	// MeasureFrom and MeasureTo, when MeasureTo is after MeasureFrom, are
	// the submit times of the jobs a report should measure: Synthetic
	// leaves out the first and last tenth of its arrival span, the
	// cluster's warm-up and drain.
	MeasureFrom, MeasureTo time.Duration
}

// Sort puts the jobs in submit order, ties broken by ID.
func (w *Workload) Sort() {
	sort.SliceStable(w.Jobs, func(i, j int) bool {
		a, b := &w.Jobs[i], &w.Jobs[j]
		if a.Submit != b.Submit {
			return a.Submit < b.Submit
		}
		return a.ID < b.ID
	})
}

// Skip counts one input record left out, for the given reason.
func (w *Workload) Skip(reason string) { w.skip(reason) }

// skip counts one input record left out, for the given reason.
func (w *Workload) skip(reason string) {
	w.Skipped++
	if w.SkipReasons == nil {
		w.SkipReasons = map[string]int{}
	}
	w.SkipReasons[reason]++
}

// Limit keeps the first n jobs (all of them when n <= 0).
func (w *Workload) Limit(n int) {
	if n > 0 && n < len(w.Jobs) {
		w.Jobs = w.Jobs[:n:n]
	}
}

// Window keeps the jobs submitted in [from, to); to <= 0 means no end.
func (w *Workload) Window(from, to time.Duration) {
	kept := w.Jobs[:0]
	for _, j := range w.Jobs {
		if j.Submit >= from && (to <= 0 || j.Submit < to) {
			kept = append(kept, j)
		}
	}
	w.Jobs = kept
}

// Rebase shifts every submit time so that the first job submits at zero.
func (w *Workload) Rebase() {
	if len(w.Jobs) == 0 {
		return
	}
	base := w.Jobs[0].Submit
	for i := range w.Jobs {
		w.Jobs[i].Submit -= base
	}
}

// Tasks is the number of task replicas in the workload.
func (w *Workload) Tasks() int {
	n := 0
	for _, j := range w.Jobs {
		for _, t := range j.Spec.Tasks {
			n += max(t.Replicas, 1)
		}
	}
	return n
}

// Check reports the first job that breaks the workload's promises: jobs
// in order with unique IDs, specs that pass spec.Job.Validate, and a
// runtime greater than zero for every task. Readers check what they
// return (the trace readers, whose specs are valid by construction, skip
// Validate for speed); it is exported for workloads built in code.
func (w *Workload) Check() error { return w.check(true) }

func (w *Workload) check(validate bool) error {
	seen := make(map[string]bool, len(w.Jobs))
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if seen[j.ID] {
			return fmt.Errorf("workload: job %q: duplicate ID", j.ID)
		}
		seen[j.ID] = true
		if i > 0 {
			p := &w.Jobs[i-1]
			if j.Submit < p.Submit || (j.Submit == p.Submit && j.ID < p.ID) {
				return fmt.Errorf("workload: job %q: out of submit order", j.ID)
			}
		}
		if validate {
			if err := j.Spec.Validate(); err != nil {
				return fmt.Errorf("workload: job %q: %w", j.ID, err)
			}
		}
		for _, t := range j.Spec.Tasks {
			if j.Runtimes[t.Name] <= 0 {
				return fmt.Errorf("workload: job %q: task %q has no runtime", j.ID, t.Name)
			}
		}
	}
	return nil
}

// Work is the resource-time a workload asks for: CPU core-seconds, memory
// GiB-seconds and GPU-seconds (a share counts as its fraction of a GPU),
// summed over every replica of every task at its true runtime.
type Work struct {
	CPUSeconds    float64
	MemorySeconds float64
	GPUSeconds    float64
}

// Work sums the resource-time of every job.
func (w *Workload) Work() Work {
	var s Work
	for _, j := range w.Jobs {
		s = s.add(jobWork(&j))
	}
	return s
}

func (s Work) add(o Work) Work {
	return Work{s.CPUSeconds + o.CPUSeconds, s.MemorySeconds + o.MemorySeconds, s.GPUSeconds + o.GPUSeconds}
}

func jobWork(j *Job) Work {
	var s Work
	for _, t := range j.Spec.Tasks {
		sec := j.Runtimes[t.Name].Seconds() * float64(max(t.Replicas, 1))
		s.CPUSeconds += sec * resource.CoresFromMilli(t.Request.CPU)
		s.MemorySeconds += sec * float64(t.Request.Memory) / (1 << 30)
		s.GPUSeconds += sec * GPUs(t.Request.GPU)
	}
	return s
}

// GPUs is how many GPUs a request asks for, a share counting as its
// fraction of one.
func GPUs(g resource.GPURequest) float64 {
	if g.Count > 0 {
		return float64(g.Count)
	}
	return float64(g.Share) / resource.WholeGPU
}

// OfferedLoad is the load the workload offers a cluster of the given
// total capacity: for CPU, memory and GPUs, the resource-time asked for
// divided by the capacity times the span from the first submit to the
// last, and the largest of the three (the dominant load). A dimension the
// capacity lacks counts as zero; a span of zero gives all zeros.
func (w *Workload) OfferedLoad(capacity resource.Vector) (cpu, mem, gpu, dominant float64) {
	if len(w.Jobs) < 2 {
		return 0, 0, 0, 0
	}
	span := (w.Jobs[len(w.Jobs)-1].Submit - w.Jobs[0].Submit).Seconds()
	if span <= 0 {
		return 0, 0, 0, 0
	}
	work := w.Work()
	if capacity.CPU > 0 {
		cpu = work.CPUSeconds / (resource.CoresFromMilli(capacity.CPU) * span)
	}
	if capacity.Memory > 0 {
		mem = work.MemorySeconds / (float64(capacity.Memory) / (1 << 30) * span)
	}
	if len(capacity.GPUs) > 0 {
		gpu = work.GPUSeconds / (float64(len(capacity.GPUs)) * span)
	}
	return cpu, mem, gpu, max(cpu, mem, gpu)
}
