package metrics

import (
	"time"
)

// Report is the summary of one simulation run, as `agora sim` prints it
// in JSON. Times are in seconds, ratios are fractions (0.83 is 83 %), and
// a figure that has no data (no finished job, no GPU, no prediction) is 0.
type Report struct {
	// Scheduler names the scheduler; Nodes, Jobs and Tasks count the
	// nodes, the jobs submitted and the task replica records.
	Scheduler string `json:"scheduler"`
	Nodes     int    `json:"nodes"`
	Jobs      int    `json:"jobs"`
	Tasks     int    `json:"tasks"`
	// Skipped counts the workload's records not replayed (Input.Skipped);
	// Unfinished, the jobs submitted that had not finished when the run
	// ended (the means below leave them out).
	Skipped    int `json:"skipped"`
	Unfinished int `json:"unfinished"`
	// Measured counts the finished jobs the job figures are over: those
	// submitted in the measurement window (every finished job when there
	// is none); MeasureFrom and MeasureTo are the window, omitted when
	// there is none.
	Measured    int     `json:"measured"`
	MeasureFrom float64 `json:"measure_from_s,omitempty"`
	MeasureTo   float64 `json:"measure_to_s,omitempty"`
	// Makespan is from the first submit to the last finish (or Input.End).
	Makespan float64 `json:"makespan_s"`
	// MeanWait, MeanResponse, MeanBoundedSlowdown and P99Wait are over
	// the finished jobs (see JobTimes); P99Wait is the nearest-rank 99th
	// percentile.
	MeanWait            float64 `json:"mean_wait_s"`
	MeanResponse        float64 `json:"mean_response_s"`
	MeanBoundedSlowdown float64 `json:"mean_bounded_slowdown"`
	P99Wait             float64 `json:"p99_wait_s"`
	// MaxWait is the longest wait of a measured job.
	MaxWait float64 `json:"max_wait_s"`
	// Utilization is the CPU used over the makespan (see Utilization);
	// BottleneckBusy the busier of the CPU and GPU fractions, over the
	// measurement window when there is one (else the makespan): the
	// resource a load test must load to say anything about queueing.
	Utilization    float64 `json:"utilization"`
	BottleneckBusy float64 `json:"bottleneck_busy"`
	// ByWidth and ByClass break the measured jobs down by width (the
	// most replicas of any of a job's tasks: processors, for an SWF job)
	// and by class (job type; left out beyond 16 classes).
	ByWidth []Group `json:"by_width,omitempty"`
	ByClass []Group `json:"by_class,omitempty"`
	// Recorded is the schedule the trace itself records for the same
	// jobs (SWF logs: the production machine's), nil when it records none.
	Recorded *Group `json:"recorded,omitempty"`
	// GPUAllocationRatio is the share of the GPUs allocated when the
	// arriving GPU requests reach the cluster's GPUs (see
	// GPUAllocationRatio).
	GPUAllocationRatio float64 `json:"gpu_allocation_ratio"`
	// JainFairness is Jain's index of the users' mean bounded slowdowns
	// (see Fairness).
	JainFairness float64 `json:"jain_fairness"`
	// LightUsersWait is the mean wait of the finished jobs of the light
	// users: those whose work (CPU-seconds held) is at most the median
	// user's (see LightUsersWait). LightUsers counts them.
	LightUsersWait float64 `json:"light_users_wait"`
	LightUsers     int     `json:"light_users"`
	// UsageBytesPerNodeMinute is what the fair share's usage summaries
	// cost: the bytes each node received per minute of the makespan, on
	// average (absent when none was sent).
	UsageBytesPerNodeMinute float64 `json:"usage_bytes_per_node_minute,omitempty"`
	// Messages and Bytes are what the scheduler sent.
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
	// PredictionMAPE and UserEstimateMAPE are the mean absolute
	// percentage errors, as fractions, of the scheduler's predicted
	// runtimes and of the users' estimates against the actual runtimes.
	PredictionMAPE   float64 `json:"prediction_mape"`
	UserEstimateMAPE float64 `json:"user_estimate_mape"`
	// Wall is the simulation's real running time.
	Wall float64 `json:"wall_s"`
	// NodeFailures, TasksRestarted, LostTaskSeconds, DuplicateRuns and
	// MessagesLost are Input.Faults (lost work in task-seconds); they are
	// left out of the JSON when zero, so a run without failures, churn or
	// loss reports exactly what it did before they were modelled.
	NodeFailures    int     `json:"node_failures,omitempty"`
	TasksRestarted  int     `json:"tasks_restarted,omitempty"`
	LostTaskSeconds float64 `json:"lost_task_s,omitempty"`
	DuplicateRuns   int     `json:"duplicate_runs,omitempty"`
	MessagesLost    int64   `json:"messages_lost,omitempty"`
}

// Compute derives the report of a finished simulation.
func Compute(in Input) Report {
	r := Report{
		Scheduler: in.Scheduler,
		Nodes:     len(in.Nodes),
		Jobs:      len(in.Jobs),
		Skipped:   in.Skipped,
		Messages:  in.Messages,
		Bytes:     in.Bytes,
		Wall:      in.Wall.Seconds(),

		NodeFailures:    in.Faults.NodeFailures,
		TasksRestarted:  in.Faults.TasksRestarted,
		LostTaskSeconds: in.Faults.LostWork.Seconds(),
		DuplicateRuns:   in.Faults.DuplicateRuns,
		MessagesLost:    in.Faults.MessagesLost,
	}
	for _, j := range in.Jobs {
		r.Tasks += len(j.Tasks)
	}
	if begin, end, ok := span(in); ok {
		r.Makespan = (end - begin).Seconds()
	}
	var waits, responses, slowdowns []float64
	times := Jobs(in)
	for _, jt := range times {
		if !jt.Finished {
			r.Unfinished++
			continue
		}
		if !in.measured(jt.Submit) {
			continue
		}
		waits = append(waits, jt.Wait.Seconds())
		responses = append(responses, jt.Response.Seconds())
		slowdowns = append(slowdowns, jt.BoundedSlowdown)
	}
	r.Measured = len(waits)
	r.MeanWait = Mean(waits)
	r.MeanResponse = Mean(responses)
	r.MeanBoundedSlowdown = Mean(slowdowns)
	r.P99Wait = Percentile(waits, 99)
	for _, w := range waits {
		r.MaxWait = max(r.MaxWait, w)
	}
	var gpuBusy float64
	r.Utilization, gpuBusy = Utilization(in)
	r.BottleneckBusy = max(r.Utilization, gpuBusy)
	if in.Measure.set() {
		r.MeasureFrom, r.MeasureTo = in.Measure.From.Seconds(), in.Measure.To.Seconds()
		c, g := busy(in, in.Measure.From, in.Measure.To)
		r.BottleneckBusy = max(c, g)
	}
	r.ByWidth, r.ByClass, r.Recorded = breakdowns(in, times)
	r.GPUAllocationRatio = GPUAllocationRatio(in)
	r.JainFairness = Fairness(in)
	r.LightUsersWait, r.LightUsers = LightUsersWait(in)
	if in.UsageBytes > 0 && r.Makespan > 0 && len(in.Nodes) > 0 {
		r.UsageBytesPerNodeMinute = float64(in.UsageBytes) / float64(len(in.Nodes)) / (r.Makespan / 60)
	}
	var pred, est, act, actE []time.Duration
	for _, p := range in.Predictions {
		pred, act = append(pred, p.Predicted), append(act, p.Actual)
		est, actE = append(est, p.Estimate), append(actE, p.Actual)
	}
	r.PredictionMAPE = MAPE(pred, act)
	r.UserEstimateMAPE = MAPE(est, actE)
	return r
}

// Fairness is Jain's index (see Jain) of the users' mean bounded
// slowdowns, over users with at least one finished job: 1 when every
// user's jobs are slowed alike, falling towards 1/users as one user's
// jobs are slowed and the others' are not. Slowdown rather than a share
// of the resources is measured because users ask for very different
// amounts: equal shares would be unfair to the heavy users, while equal
// slowdown is what each user sees as fair treatment. It is 0 without
// finished jobs.
func Fairness(in Input) float64 {
	sum := map[string]float64{}
	count := map[string]int{}
	var users []string
	for _, jt := range Jobs(in) {
		if !jt.Finished {
			continue
		}
		if count[jt.User] == 0 {
			users = append(users, jt.User)
		}
		sum[jt.User] += jt.BoundedSlowdown
		count[jt.User]++
	}
	means := make([]float64, 0, len(users))
	for _, u := range users {
		means = append(means, sum[u]/float64(count[u]))
	}
	return Jain(means)
}

// LightUsersWait is the mean wait (s) of the finished jobs of the users
// whose work — the CPU-seconds their tasks held, each replica's CPU
// request times its run — is at most the median user's, and how many
// such users there are: the users a fair share is for.
func LightUsersWait(in Input) (float64, int) {
	work := map[string]float64{}
	for _, j := range in.Jobs {
		for _, t := range j.Tasks {
			if t.Started && t.Finished {
				work[j.User] += float64(t.Request.CPU) / 1000 * (t.Finish - t.Start).Seconds()
			}
		}
	}
	if len(work) == 0 {
		return 0, 0
	}
	ws := make([]float64, 0, len(work))
	for _, w := range work {
		ws = append(ws, w)
	}
	median := Percentile(ws, 50)
	var waits []float64
	light := map[string]bool{}
	for _, jt := range Jobs(in) {
		if jt.Finished && in.measured(jt.Submit) && work[jt.User] <= median {
			waits = append(waits, jt.Wait.Seconds())
			light[jt.User] = true
		}
	}
	return Mean(waits), len(light)
}

// Utilization is the share of the cluster's CPU, and of its GPUs, that
// running tasks held over the makespan: the CPU-seconds held (each
// started replica's CPU request times the time from its start to its
// finish, or to the end of the makespan when it did not finish) over the
// total CPU times the makespan; the GPU variant likewise with GPUs, a
// share counting as its fraction of a GPU. Each is 0 when the cluster
// has none of that resource or the makespan is zero.
func Utilization(in Input) (cpu, gpu float64) {
	begin, end, ok := span(in)
	if !ok {
		return 0, 0
	}
	return busy(in, begin, end)
}

// busy is the share of the cluster's CPU and GPUs held over [begin, end].
func busy(in Input, begin, end time.Duration) (cpu, gpu float64) {
	capCPU, capGPU := capacity(in.Nodes)
	if end <= begin {
		return 0, 0
	}
	var usedCPU, usedGPU float64
	for _, j := range in.Jobs {
		for _, t := range j.Tasks {
			s, f, ok := held(t, begin, end)
			if !ok {
				continue
			}
			sec := (f - s).Seconds()
			usedCPU += float64(t.Request.CPU) * sec
			usedGPU += float64(gpuMilli(t.Request)) * sec
		}
	}
	secs := (end - begin).Seconds()
	if capCPU > 0 {
		cpu = usedCPU / (float64(capCPU) * secs)
	}
	if capGPU > 0 {
		gpu = usedGPU / (float64(capGPU) * secs)
	}
	return cpu, gpu
}

// held is the interval a started task held its resources, within
// [begin, end].
func held(t TaskRecord, begin, end time.Duration) (s, f time.Duration, ok bool) {
	if !t.Started {
		return 0, 0, false
	}
	s, f = t.Start, end
	if t.Finished {
		f = t.Finish
	}
	s, f = max(s, begin), min(f, end)
	return s, f, f > s
}
