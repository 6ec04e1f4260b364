package metrics

import (
	"bufio"
	"compress/gzip"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/testnet/sim/internal/traces"
)

// recordedSchedule reads the schedule an SWF log records — each job
// started after its recorded wait (field 3) on its allocated processors
// (field 5) — as simulation records, one core per processor.
func recordedSchedule(t *testing.T, path string, procs int) Input {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Nodes: make([]resource.Vector, procs)}
	for i := range in.Nodes {
		in.Nodes[i].CPU = 1000
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 18 || strings.HasPrefix(fs[0], ";") {
			continue
		}
		field := func(n int) int64 {
			v, err := strconv.ParseInt(fs[n-1], 10, 64)
			if err != nil {
				t.Fatalf("%s: job %s field %d: %v", path, fs[0], n, err)
			}
			return v
		}
		submit, wait, run, alloc := field(2), field(3), field(4), field(5)
		if alloc <= 0 {
			alloc = field(8)
		}
		if run < 0 || wait < 0 || alloc <= 0 {
			continue // cancelled before it started
		}
		start := time.Duration(submit+wait) * time.Second
		in.Jobs = append(in.Jobs, JobRecord{ID: fs[0], User: fs[11], Tasks: []TaskRecord{{
			Name: "main", Request: resource.Request{CPU: alloc * 1000},
			Submit: time.Duration(submit) * time.Second, Start: start, Finish: start + time.Duration(run)*time.Second,
			Started: true, Finished: true,
		}}})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestRecordedSchedules checks the definitions of wait, bounded slowdown
// and utilization against the figures the traces' README gives for the
// schedules the SWF logs record.
func TestRecordedSchedules(t *testing.T) {
	cases := []struct {
		file                    string
		procs                   int
		waitHours, slowdown, ut float64
	}{
		{"SDSC-SP2-1998-4.2-cln.swf.gz", 128, 7.1, 68.9, 0.834},
		{"KTH-SP2-1996-2.1-cln.swf.gz", 100, 4.25, 193.4, 0.701},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r := Compute(recordedSchedule(t, traces.File(t, c.file), c.procs))
			t.Logf("%d jobs: mean wait %.3f h, mean bounded slowdown %.2f, utilization %.4f, p99 wait %.1f h, Jain %.3f",
				r.Jobs, r.MeanWait/3600, r.MeanBoundedSlowdown, r.Utilization, r.P99Wait/3600, r.JainFairness)
			if math.Abs(r.MeanWait/3600-c.waitHours) > 0.05 || math.Abs(r.MeanBoundedSlowdown-c.slowdown) > 0.1 ||
				math.Abs(r.Utilization-c.ut) > 0.001 {
				t.Errorf("mean wait %.3f h, slowdown %.2f, utilization %.4f; the README has %v h, %v, %v",
					r.MeanWait/3600, r.MeanBoundedSlowdown, r.Utilization, c.waitHours, c.slowdown, c.ut)
			}
		})
	}
}
