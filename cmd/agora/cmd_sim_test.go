package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// simJSON runs `agora sim ... --json` in process and returns the report
// with wall_s removed.
func simJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(append([]string{"sim", "--json"}, args...), &out, &errb); code != 0 {
		t.Fatalf("agora sim %v: exit %d: %s", args, code, errb.String())
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"scheduler", "nodes", "jobs", "tasks", "makespan_s", "mean_wait_s", "mean_response_s",
		"mean_bounded_slowdown", "p99_wait_s", "utilization", "gpu_allocation_ratio", "jain_fairness", "messages",
		"bytes", "prediction_mape", "user_estimate_mape", "wall_s"} {
		if _, ok := r[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	delete(r, "wall_s")
	return r
}

// Done-when 1: the same seed gives the same report (but wall_s), a
// different seed a different one.
func TestSimDeterministic(t *testing.T) {
	for _, sched := range []string{"auction", "easy"} {
		t.Run(sched, func(t *testing.T) {
			args := []string{"--workload", "synthetic:3,jobs=80", "--scheduler", sched, "--cluster", "hetero:30"}
			a := simJSON(t, append(args, "--seed", "5")...)
			b := simJSON(t, append(args, "--seed", "5")...)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("same seed, different reports:\n%s\n%s", ja, jb)
			}
			if a["jobs"].(float64) != 80 || a["mean_response_s"].(float64) <= 0 {
				t.Fatalf("implausible report %s", ja)
			}
			if sched == "auction" && a["messages"].(float64) == 0 {
				t.Fatalf("the auction sent no messages: %s", ja)
			}
			c := simJSON(t, "--workload", "synthetic:4,jobs=80", "--scheduler", sched, "--cluster", "hetero:30", "--seed", "6")
			jc, _ := json.Marshal(c)
			if bytes.Equal(ja, jc) {
				t.Fatalf("different seeds, identical reports %s", ja)
			}
		})
	}
}

func TestSimBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--workload is required"},
		{[]string{"--workload", "synthetic:1", "--scheduler", "fifo"}, `unknown scheduler "fifo"`},
		{[]string{"--workload", "nosuch.swf"}, "--workload"},
		{[]string{"--workload", "synthetic:1", "--cluster", "hetero:x"}, "--cluster"},
		{[]string{"--workload", "synthetic:1", "--cluster", "hetero-devices:5"}, "hetero-devices:N with N from 10"},
		{[]string{"--workload", "synthetic:1,devices=-1", "--cluster", "hetero-devices:20"}, "device-job share"},
		{[]string{"--workload", "synthetic:1", "--cluster", "/nonexistent.yaml"}, "--cluster"},
		{[]string{"--workload", "synthetic:1", "--weights", "1,2"}, "--weights"},
		{[]string{"--workload", "synthetic:1", "--d", "-1"}, "--d"},
		{[]string{"--workload", "synthetic:1", "--inflate", "-1"}, "--inflate"},
		{[]string{"--workload", "synthetic:1", "--gpu-models", "-0.1"}, "--gpu-models"},
		{[]string{"--workload", "synthetic:1", "--gpu-models", "1.5"}, "--gpu-models"},
		{[]string{"--workload", "synthetic:1", "--loss", "1"}, "--loss"},
		{[]string{"--workload", "synthetic:1", "--loss", "-0.1"}, "--loss"},
		{[]string{"--workload", "synthetic:1", "--loss", "NaN"}, "--loss"},
		{[]string{"--workload", "synthetic:1", "--failure-rate", "-2"}, "--failure-rate"},
		{[]string{"--workload", "synthetic:1", "--repair", "-1m"}, "--repair"},
		{[]string{"--workload", "synthetic:1", "--progress", "-1s"}, "--progress"},
		{[]string{"--workload", "synthetic:1", "--easy-overrun", "later"}, "--easy-overrun"},
		{[]string{"--workload", "synthetic:1", "--easy-pass", "job"}, "--easy-pass"},
	} {
		var out, errb bytes.Buffer
		code := runMain(append([]string{"sim"}, tc.args...), &out, &errb)
		if code != exitBadUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("agora sim %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// The fragmentation experiment: arrivals never depart, the run stops
// after the last, and the allocation ratio is reported.
func TestSimInflate(t *testing.T) {
	r := simJSON(t, "--workload", "synthetic:2,jobs=200", "--scheduler", "sjf-oracle", "--inflate", "1")
	g := r["gpu_allocation_ratio"].(float64)
	if g < 0.5 || g > 1 {
		t.Fatalf("gpu_allocation_ratio %v, want a plausible fraction", g)
	}
}

// --gpu-models pins GPU tasks to the cluster's models and the run still
// places them.
func TestSimGPUModels(t *testing.T) {
	r := simJSON(t, "--workload", "synthetic:2,jobs=200", "--scheduler", "sjf-oracle", "--inflate", "1", "--gpu-models", "0.4")
	if g := r["gpu_allocation_ratio"].(float64); g < 0.5 || g > 1 {
		t.Fatalf("gpu_allocation_ratio %v, want a plausible fraction", g)
	}
}

// Failures and loss: the report gains their fields after the old ones,
// which keep their order; the same seed still gives the same report; and
// a run without failures or loss shows none of the new fields.
func TestSimFailuresAndLoss(t *testing.T) {
	for _, sched := range []string{"auction", "easy"} {
		t.Run(sched, func(t *testing.T) {
			args := []string{"--workload", "synthetic:3,jobs=60", "--scheduler", sched, "--cluster", "hetero:30",
				"--failure-rate", "0.02", "--repair", "15m", "--loss", "0.01", "--seed", "2"}
			a := simJSON(t, args...)
			b := simJSON(t, args...)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("same seed, different reports:\n%s\n%s", ja, jb)
			}
			if a["node_failures"] == nil || a["node_failures"].(float64) == 0 {
				t.Fatalf("no node failures reported: %s", ja)
			}
			if sched == "auction" && (a["messages_lost"] == nil || a["messages_lost"].(float64) == 0) {
				t.Fatalf("no messages lost: %s", ja)
			}
			var out, errb bytes.Buffer
			if code := runMain(append([]string{"sim", "--json"}, args...), &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			last := -1
			for _, k := range []string{"scheduler", "nodes", "jobs", "tasks", "makespan_s", "mean_wait_s", "mean_response_s",
				"mean_bounded_slowdown", "p99_wait_s", "utilization", "gpu_allocation_ratio", "jain_fairness", "messages",
				"bytes", "prediction_mape", "user_estimate_mape", "wall_s", "node_failures"} {
				at := strings.Index(out.String(), `"`+k+`"`)
				if at < last {
					t.Fatalf("%q out of order in %s", k, out.String())
				}
				last = at
			}
			plain := simJSON(t, "--workload", "synthetic:3,jobs=60", "--scheduler", sched, "--cluster", "hetero:30", "--seed", "2")
			for _, k := range []string{"node_failures", "tasks_restarted", "lost_task_s", "duplicate_runs", "messages_lost"} {
				if _, ok := plain[k]; ok {
					t.Errorf("a run without failures or loss reports %q", k)
				}
			}
		})
	}
}

// --progress reports how far a run has got (virtual time, jobs ended and
// their rate) on stderr and changes nothing in the report.
func TestSimProgress(t *testing.T) {
	args := []string{"--workload", "synthetic:3,jobs=300", "--cluster", "hetero:30", "--json"}
	var plain, out, errb bytes.Buffer
	if code := runMain(append([]string{"sim"}, args...), &plain, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := runMain(append([]string{"sim", "--progress", "1ns"}, args...), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if last := lines[len(lines)-1]; len(lines) < 2 || !strings.Contains(last, "of 300 jobs ended") || !strings.Contains(last, "jobs/s)") {
		t.Fatalf("progress lines %q, want several naming the 300 jobs and the rate", lines)
	}
	strip := func(b []byte) string {
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		delete(r, "wall_s")
		j, _ := json.Marshal(r)
		return string(j)
	}
	if a, b := strip(plain.Bytes()), strip(out.Bytes()); a != b {
		t.Fatalf("--progress changed the report:\n%s\n%s", a, b)
	}
}
