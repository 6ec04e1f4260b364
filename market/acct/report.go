package acct

import (
	"cmp"
	"slices"
	"time"
)

// Usage is one user's or site's part of a report.
type Usage struct {
	Name string `json:"name"`
	// CPUHours are measured CPU time; AllocCPUHours the CPUs the
	// attempts were given times their wall time; GPUHours the GPUs given
	// times wall time.
	CPUHours      float64 `json:"cpu_hours"`
	AllocCPUHours float64 `json:"alloc_cpu_hours"`
	GPUHours      float64 `json:"gpu_hours"`
	Jobs          int     `json:"jobs"`
	Attempts      int     `json:"attempts"`
	Failed        int     `json:"failed_attempts"`
	// MeanWait is over attempts whose wait is known, MeanTurnaround over
	// jobs whose submission is known (the last end of the job's attempts
	// less its submission); seconds, -1 when none is known.
	MeanWait       float64 `json:"mean_wait"`
	MeanTurnaround float64 `json:"mean_turnaround"`
	// Share is the user's share (1 unless the user's certificate names
	// another); Normalized is AllocCPUHours + GPUHours over Share, what
	// Jain's index is taken over.
	Share      float64 `json:"share,omitempty"`
	Normalized float64 `json:"normalized,omitempty"`
}

// Report is `agora report`'s answer over a period.
type Report struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	Users []Usage   `json:"users"`
	Sites []Usage   `json:"sites"`
	Total Usage     `json:"total"`
	// Throughput is jobs ended per hour of the period.
	Throughput float64 `json:"throughput_per_hour"`
	// Utilization is the allocated CPU time over the network's CPU
	// capacity over the period (capacity given by the caller: the CPUs
	// of the nodes it sees); -1 when the capacity is unknown.
	Utilization float64 `json:"utilization"`
	// Jain is Jain's fairness index over the users' normalized usage:
	// (Σx)² / (n Σx²), 1 when all got the same, 1/n when one got all; 0
	// with no user.
	Jain float64 `json:"jain"`
}

// MakeReport computes the report of rows over [since, until) (zero:
// from the first row's start, to the last row's end) for a network of
// capacityCPUs cores (0: unknown), with the users' shares (missing: 1).
func MakeReport(rows []Attempt, since, until time.Time, capacityCPUs float64, shares map[string]float64) Report {
	if since.IsZero() || until.IsZero() {
		var first, last time.Time
		for _, a := range rows {
			b := a.Start
			if !a.Eligible.IsZero() {
				b = a.Eligible
			}
			if b.IsZero() {
				b = a.End
			}
			if first.IsZero() || b.Before(first) {
				first = b
			}
			if a.End.After(last) {
				last = a.End
			}
		}
		if since.IsZero() {
			since = first
		}
		if until.IsZero() {
			until = last
		}
	}
	rep := Report{Since: since, Until: until, Utilization: -1}
	users, sites := newTally(), newTally()
	total := newTally()
	for i := range rows {
		a := &rows[i]
		users.add(orNone(a.User), a)
		sites.add(orNone(a.Site), a)
		total.add("all", a)
	}
	rep.Users, rep.Sites = users.usages(true, shares), sites.usages(false, nil)
	if t := total.usages(false, nil); len(t) == 1 {
		rep.Total = t[0]
	} else {
		rep.Total = Usage{Name: "all", MeanWait: -1, MeanTurnaround: -1}
	}
	hours := until.Sub(since).Hours()
	if hours > 0 {
		rep.Throughput = float64(rep.Total.Jobs) / hours
		if capacityCPUs > 0 {
			rep.Utilization = rep.Total.AllocCPUHours / (capacityCPUs * hours)
		}
	}
	xs := make([]float64, 0, len(rep.Users))
	for _, u := range rep.Users {
		xs = append(xs, u.Normalized)
	}
	rep.Jain = Jain(xs)
	return rep
}

// Jain is Jain's fairness index of xs: (Σx)² / (n Σx²); 1 for none or
// all zero (nobody got more than anyone).
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if len(xs) == 0 || s2 == 0 {
		return 1
	}
	return s * s / (float64(len(xs)) * s2)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tally sums rows by name.
type tally map[string]*acc

type acc struct {
	u                Usage
	jobs             map[string]*jobSpan
	waits, waitCount float64
}

type jobSpan struct {
	submit, end time.Time
}

func newTally() tally { return tally{} }

func (t tally) add(name string, a *Attempt) {
	c := t[name]
	if c == nil {
		c = &acc{u: Usage{Name: name}, jobs: map[string]*jobSpan{}}
		t[name] = c
	}
	c.u.Attempts++
	if a.State != "succeeded" {
		c.u.Failed++
	}
	c.u.CPUHours += a.CPUSeconds / 3600
	c.u.AllocCPUHours += a.AllocCPUs * a.Elapsed / 3600
	c.u.GPUHours += a.GPUSeconds / 3600
	if a.Wait >= 0 {
		c.waits += a.Wait
		c.waitCount++
	}
	j := c.jobs[a.Job]
	if j == nil {
		j = &jobSpan{}
		c.jobs[a.Job] = j
	}
	if !a.Submit.IsZero() {
		j.submit = a.Submit
	}
	if a.End.After(j.end) {
		j.end = a.End
	}
}

func (t tally) usages(users bool, shares map[string]float64) []Usage {
	out := make([]Usage, 0, len(t))
	for _, c := range t {
		u := c.u
		u.Jobs = len(c.jobs)
		u.MeanWait, u.MeanTurnaround = -1, -1
		if c.waitCount > 0 {
			u.MeanWait = c.waits / c.waitCount
		}
		var turn, n float64
		for _, j := range c.jobs {
			if !j.submit.IsZero() {
				turn += j.end.Sub(j.submit).Seconds()
				n++
			}
		}
		if n > 0 {
			u.MeanTurnaround = turn / n
		}
		if users {
			u.Share = 1
			if s, ok := shares[u.Name]; ok && s > 0 {
				u.Share = s
			}
			u.Normalized = (u.AllocCPUHours + u.GPUHours) / u.Share
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Usage) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
