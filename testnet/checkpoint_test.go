package testnet

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// counterScript counts to 60, one step per 0.5 s, keeping the count in
// $AGORA_CHECKPOINT_DIR/count (written to a temporary file, then renamed,
// so a snapshot never sees half a number) and starting from it when it
// exists.
const counterScript = `d="$AGORA_CHECKPOINT_DIR"; n=$(cat "$d/count" 2>/dev/null || echo 0)
if [ "$AGORA_RESUMED" = 1 ]; then echo "resumed from $n"; fi
while [ "$n" -lt 60 ]; do
  n=$((n+1)); echo "$n" > "$d/count.tmp"; mv "$d/count.tmp" "$d/count"; echo "step $n"; sleep 0.5
done`

var (
	stepRE    = regexp.MustCompile(`step (\d+)`)
	resumedRE = regexp.MustCompile(`resumed from (\d+)`)
)

// lastMatch returns the number in the last match of re in s, or -1.
func lastMatch(re *regexp.Regexp, s string) int {
	m := re.FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		return -1
	}
	v, _ := strconv.Atoi(m[len(m)-1][1])
	return v
}

// checkpointNet is a manager that runs nothing (node 0) and two 2-CPU
// workers, converged, with a checkpointing counter job submitted to the
// manager. It returns the net, the job ID and the index of the worker the
// task started on.
func checkpointNet(t *testing.T) (*Net, string, int) {
	res := func(i int) string {
		if i == 0 {
			return "cpu: 0\nmemory: 1GiB\ngpus: []\n"
		}
		return "cpu: 2\nmemory: 4GiB\ngpus: []\n"
	}
	net := New(t, 3, Options{Resources: res, Topology: Star})
	net.WaitConverged(10 * time.Second)
	cmd, _ := json.Marshal([]string{"sh", "-c", counterScript})
	id, err := net.Node(0).Submit(fmt.Sprintf(`{"name": "counter", "tasks": [{"name": "count", "command": %s, "resources": {"cpu": 1}, "checkpoint": {"interval": "2s"}}]}`, cmd))
	if err != nil {
		t.Fatal(err)
	}
	var first string
	waitfor.Cond(t, 15*time.Second, "the task to run", func() bool {
		s, err := net.Node(0).Status(id)
		if err == nil && s.Tasks[0].State == "running" {
			first = s.Tasks[0].Node
		}
		return first != ""
	})
	for i := 1; i < net.N(); i++ {
		if net.Node(i).ID().String() == first {
			return net, id, i
		}
	}
	t.Fatalf("task runs on %s, not on a worker", first)
	return nil, "", 0
}

// latestLog returns the output of the task's latest attempt, as node 0
// reads it from whichever node ran it, and that node.
func latestLog(net *Net, id string) (data, node string) {
	lg, err := net.Node(0).Logs(id, "")
	if err != nil || len(lg.Logs) == 0 {
		return "", ""
	}
	return lg.Logs[0].Data, lg.Logs[0].Node
}

// waitStep waits until the task's latest attempt printed step n or later
// and returns the step seen.
func waitStep(t *testing.T, net *Net, id string, n int, d time.Duration) int {
	t.Helper()
	step := -1
	waitfor.Cond(t, d, fmt.Sprintf("the counter to reach %d", n), func() bool {
		data, _ := latestLog(net, id)
		step = lastMatch(stepRE, data)
		return step >= n
	})
	return step
}

// waitResumed waits until an attempt on another node than gone printed
// "resumed from N" and returns N.
func waitResumed(t *testing.T, net *Net, id, gone string, d time.Duration) int {
	t.Helper()
	from := -1
	waitfor.Cond(t, d, "the task to resume on another node", func() bool {
		data, node := latestLog(net, id)
		if node == "" || node == gone {
			return false
		}
		from = lastMatch(resumedRE, data)
		return from >= 0
	})
	return from
}

// checkOneSuccess fails unless the job succeeded with exactly one
// successful attempt in the manager's record, and returns the record's
// history as text.
func checkOneSuccess(t *testing.T, net *Net, id string) string {
	t.Helper()
	if s := waitJob(t, net.Node(0), id, 45*time.Second); s.State != "succeeded" {
		t.Fatalf("job %s: %s", s.State, s.Reason)
	}
	return oneSuccess(t, net.Node(0), id)
}

// oneSuccess fails t unless the first task of job id, managed by nd,
// has exactly one successful attempt, and returns its history.
func oneSuccess(t *testing.T, nd *Node, id string) string {
	t.Helper()
	rec, ok := nd.JobRecord(id)
	if !ok {
		t.Fatalf("no record of job %s on its manager", id)
	}
	var hist []string
	ok1 := 0
	for _, h := range rec.Tasks[0].History {
		hist = append(hist, fmt.Sprintf("attempt %d epoch %d %s (%s)", h.Attempt, h.Epoch, h.State, h.Reason))
		if h.State == market.TaskSucceeded {
			ok1++
		}
	}
	if ok1 != 1 {
		t.Fatalf("%d successful attempts: %s", ok1, strings.Join(hist, "; "))
	}
	return strings.Join(hist, "; ")
}

// TestCheckpointResumeAfterKill: the executor of a checkpointing task is
// killed (kill -9) at about step 20; the task resumes on the other worker
// from its last replicated checkpoint (at most one 2 s interval, 4 steps,
// behind) and succeeds exactly once.
func TestCheckpointResumeAfterKill(t *testing.T) {
	net, id, exec := checkpointNet(t)
	gone := net.Node(exec).ID().String()
	atKill := waitStep(t, net, id, 20, 25*time.Second)
	net.Kill(exec)
	killed := time.Now()
	from := waitResumed(t, net, id, gone, 20*time.Second)
	recovery := time.Since(killed)
	data, _ := latestLog(net, id)
	hist := checkOneSuccess(t, net, id)
	t.Logf("killed node %d at step %d; resumed from %d on the other worker %v after the kill; history: %s",
		exec, atKill, from, recovery.Round(time.Millisecond), hist)
	if from < 15 || from > atKill+1 {
		t.Fatalf("resumed from %d, want 15..%d", from, atKill+1)
	}
	if data, _ = latestLog(net, id); !strings.Contains(data, "step 60") || strings.Contains(data, fmt.Sprintf("step %d\n", from)) {
		t.Fatalf("the resumed attempt did not count on from %d to 60:\n%s", from, data)
	}
}

// TestCheckpointOnGracefulDrain: the executor is drained mid-run; the
// task's last snapshot, taken after it exited on SIGTERM, lets it resume
// on the other worker having lost at most one interval of work.
func TestCheckpointOnGracefulDrain(t *testing.T) {
	net, id, exec := checkpointNet(t)
	gone := net.Node(exec).ID().String()
	atDrain := waitStep(t, net, id, 12, 25*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := net.Node(exec).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	drained := time.Since(start)
	from := waitResumed(t, net, id, gone, 20*time.Second)
	resumed := time.Since(start)
	hist := checkOneSuccess(t, net, id)
	t.Logf("drained node %d at step %d in %v; resumed from %d %v after the drain began; history: %s",
		exec, atDrain, drained.Round(time.Millisecond), from, resumed.Round(time.Millisecond), hist)
	if from < atDrain-4 {
		t.Fatalf("resumed from %d, want at least %d (step %d at drain, less one interval)", from, atDrain-4, atDrain)
	}
}
