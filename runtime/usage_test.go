package runtime

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// burnThenTimes burns CPU in a child shell, then prints, from the shell
// that waited for it, its children's user and system time (`times`): the
// figure the runtime's usage must match, measured by the task itself.
const burnThenTimes = `sh -c 'i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done'; times`

// timesCPU is the children's CPU time in `times` output (its second
// line: "0m1.23s 0m0.01s").
func timesCPU(t *testing.T, out string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$`).FindAllStringSubmatch(out, -1)
	if len(m) < 2 {
		t.Fatalf("no `times` lines in %q", out)
	}
	var d float64
	for _, f := range [][2]string{{m[1][1], m[1][2]}, {m[1][3], m[1][4]}} {
		mins, _ := strconv.ParseFloat(f[0], 64)
		secs, _ := strconv.ParseFloat(f[1], 64)
		d += mins*60 + secs
	}
	return time.Duration(d * float64(time.Second))
}

// TestUsageMeasured: a task's reported CPU time matches what its shell's
// `times` says its child used, within 5 % (and a few ms for the shell
// itself), from the cgroup (root, cgroups present) and from rusage.
func TestUsageMeasured(t *testing.T) {
	modes := []struct {
		name   string
		runner func(t *testing.T) *Runner
		source string
	}{
		{"rusage", func(t *testing.T) *Runner { return newTestRunner(t, Options{}) }, "rusage"},
		{"cgroup", limitedRunner, "cgroup"},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := m.runner(t)
			rec := newRecorder()
			done := newDone()
			if err := r.Start("usage-"+m.name, testSpec(t, sh(burnThenTimes)), rec, done.fn); err != nil {
				t.Fatal(err)
			}
			res := done.wait(t, time.Minute)
			if res.ExitCode != 0 {
				t.Fatalf("task failed: %s", res.Reason)
			}
			want := timesCPU(t, rec.text(StreamStdout))
			got := res.Usage.CPU
			t.Logf("%s: task's own count %v, reported %v, memory peak %d KiB", res.Usage.Source, want, got, res.Usage.MemPeak>>10)
			if res.Usage.Source != m.source {
				t.Fatalf("usage source %q, want %q", res.Usage.Source, m.source)
			}
			if want < 100*time.Millisecond {
				t.Fatalf("the burn used only %v: the check would mean nothing", want)
			}
			if diff := math.Abs(float64(got - want)); diff > 0.05*float64(want)+float64(30*time.Millisecond) {
				t.Fatalf("reported CPU %v, the task counted %v: %s apart", got, want, fmt.Sprint(time.Duration(diff)))
			}
			if res.Usage.MemPeak <= 0 {
				t.Fatalf("no memory peak measured")
			}
		})
	}
}
