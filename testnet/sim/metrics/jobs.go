package metrics

import (
	"math"
	"time"
)

// Tau is the bounded slowdown's threshold: runtimes shorter than Tau
// count as Tau, so that a few seconds' wait for a one-second job does not
// dominate the mean.
const Tau = 10 * time.Second

// JobTimes are the times of one job, derived from its task records.
type JobTimes struct {
	ID, User string
	// Submit is the earliest task submit, Start the earliest task start
	// and Finish the latest task finish.
	Submit, Start, Finish time.Duration
	// Finished is true when every task record is finished; the other
	// figures are zero when it is not.
	Finished bool
	// Wait is Start − Submit and Response Finish − Submit.
	Wait, Response time.Duration
	// Runtime is the job's critical path: the longest chain of tasks,
	// following After, of each task's actual run time (Finish − Start,
	// its longest replica). It is the response the job would have on an
	// idle cluster of its own; for a job of one task it is that task's
	// run time.
	Runtime time.Duration
	// BoundedSlowdown is max(1, Response / max(Runtime, Tau)).
	BoundedSlowdown float64
}

// Jobs derives the times of every job, in input order.
func Jobs(in Input) []JobTimes {
	out := make([]JobTimes, 0, len(in.Jobs))
	for _, j := range in.Jobs {
		out = append(out, jobTimes(j))
	}
	return out
}

func jobTimes(j JobRecord) JobTimes {
	jt := JobTimes{ID: j.ID, User: j.User}
	if len(j.Tasks) == 0 {
		return jt
	}
	jt.Finished = true
	started := false
	for i, t := range j.Tasks {
		if i == 0 || t.Submit < jt.Submit {
			jt.Submit = t.Submit
		}
		if t.Started && (!started || t.Start < jt.Start) {
			jt.Start, started = t.Start, true
		}
		if !t.Started || !t.Finished {
			jt.Finished = false
		} else if t.Finish > jt.Finish {
			jt.Finish = t.Finish
		}
	}
	if !jt.Finished {
		return JobTimes{ID: j.ID, User: j.User, Submit: jt.Submit, Start: jt.Start}
	}
	jt.Wait = jt.Start - jt.Submit
	jt.Response = jt.Finish - jt.Submit
	jt.Runtime = criticalPath(j.Tasks)
	jt.BoundedSlowdown = boundedSlowdown(jt.Response, jt.Runtime)
	return jt
}

func boundedSlowdown(response, runtime time.Duration) float64 {
	return math.Max(1, response.Seconds()/max(runtime, Tau).Seconds())
}

// criticalPath is the longest chain of finished tasks following After,
// each task lasting its longest replica's Finish − Start. Names After
// gives that are not tasks of the job, and edges that would close a
// cycle, are ignored.
func criticalPath(tasks []TaskRecord) time.Duration {
	dur := map[string]time.Duration{}
	after := map[string][]string{}
	var names []string
	for _, t := range tasks {
		d, seen := dur[t.Name]
		if !seen {
			names = append(names, t.Name)
			after[t.Name] = t.After
		}
		dur[t.Name] = max(d, t.Finish-t.Start)
	}
	const visiting, done = -1, 1
	memo := map[string]time.Duration{}
	state := map[string]int{}
	var path func(string) time.Duration
	path = func(n string) time.Duration {
		if state[n] == done {
			return memo[n]
		}
		state[n] = visiting
		var longest time.Duration
		for _, p := range after[n] {
			if _, ok := dur[p]; !ok || state[p] == visiting {
				continue
			}
			longest = max(longest, path(p))
		}
		memo[n], state[n] = longest+dur[n], done
		return memo[n]
	}
	var cp time.Duration
	for _, n := range names {
		cp = max(cp, path(n))
	}
	return cp
}

// span is the simulation's extent: from the earliest submit to the
// latest finish, or to in.End when that is later. ok is false when there
// are no tasks.
func span(in Input) (begin, end time.Duration, ok bool) {
	for _, j := range in.Jobs {
		for _, t := range j.Tasks {
			if !ok || t.Submit < begin {
				begin = t.Submit
			}
			if t.Started && t.Finished && (!ok || t.Finish > end) {
				end = t.Finish
			}
			ok = true
		}
	}
	if !ok {
		return 0, 0, false
	}
	return begin, max(end, in.End, begin), true
}
