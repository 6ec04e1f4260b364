package main

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkSubmitToStart (issue 24, done-when 5): one node on loopback,
// through the real CLI. It measures, in the same run, the median wall
// time of a bare `agora id` (a process start and one API round trip),
// the median time from starting `agora run -- true` to the task's start
// as the manager recorded it, and how long 200 trivial jobs submitted
// one after another take to all finish against the time it takes only
// to submit them. It fails unless submit → start is within 10 ms of
// `agora id` and the 200 jobs finish within 1.2× their submission time.
//
//	go test -run '^$' -bench SubmitToStart -benchtime 1x ./cmd/agora/
func BenchmarkSubmitToStart(b *testing.B) {
	p := startNode(b, b.TempDir())
	c := newClient(p.api)
	run := func() (string, time.Time) {
		t0 := time.Now()
		out, err := exec.Command(agoraBin, "run", "--api", p.api, "--json", "--", "true").Output()
		if err != nil {
			b.Fatalf("agora run: %v", err)
		}
		return jobID(string(out)), t0
	}
	status := func(id string) jobStatus {
		var st jobStatus
		if err := c.do("GET", jobPath(id, ""), nil, &st); err != nil {
			b.Fatal(err)
		}
		return st
	}
	waitStarted := func(id string) time.Time {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if st := status(id); len(st.Tasks) > 0 && st.Tasks[0].Started != "" {
				at, err := time.Parse(time.RFC3339Nano, st.Tasks[0].Started)
				if err != nil {
					b.Fatal(err)
				}
				return at
			}
			time.Sleep(2 * time.Millisecond)
		}
		b.Fatalf("job %s did not start", id)
		return time.Time{}
	}
	id, _ := run() // warm up: the node's first task
	waitStarted(id)
	b.ResetTimer()
	for range b.N {
		const samples = 31
		var ids, starts []time.Duration
		for range samples {
			t0 := time.Now()
			if err := exec.Command(agoraBin, "id", "--api", p.api).Run(); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, time.Since(t0))
			id, t1 := run()
			starts = append(starts, waitStarted(id).Sub(t1))
		}
		slices.Sort(ids)
		slices.Sort(starts)
		idMed, startMed := ids[samples/2], starts[samples/2]

		const jobs = 200
		t0 := time.Now()
		var all []string
		for range jobs {
			id, _ := run()
			all = append(all, id)
		}
		submitted := time.Since(t0)
		var last time.Time
		deadline := time.Now().Add(2 * time.Minute)
		for _, id := range all {
			for {
				st := status(id)
				if st.State == "succeeded" {
					if len(st.Tasks) > 0 {
						if at, err := time.Parse(time.RFC3339Nano, st.Tasks[0].Finished); err == nil && at.After(last) {
							last = at
						}
					}
					break
				}
				if st.State == "failed" || time.Now().After(deadline) {
					b.Fatalf("job %s: %s %s", id, st.State, st.Reason)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		finished := last.Sub(t0)
		b.ReportMetric(float64(idMed.Microseconds())/1000, "id-ms")
		b.ReportMetric(float64(startMed.Microseconds())/1000, "submit-to-start-ms")
		b.ReportMetric(float64(submitted.Milliseconds()), "submit-200-ms")
		b.ReportMetric(float64(finished.Milliseconds()), "finish-200-ms")
		b.ReportMetric(finished.Seconds()/submitted.Seconds(), "finish/submit")
		if startMed > idMed+10*time.Millisecond {
			b.Errorf("submit → start median %v, over agora id's %v + 10 ms", startMed, idMed)
		}
		if finished.Seconds() > 1.2*submitted.Seconds() {
			b.Errorf("200 jobs finished %v after the first submit, over 1.2× the %v the submissions took", finished, submitted)
		}
	}
}
