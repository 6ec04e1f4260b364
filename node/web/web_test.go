package web

import (
	"testing"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
)

// TestDAG: tasks are laid out by dependency depth, edges join a
// dependency's right side to its dependant's left, and a task's state
// aggregates its replicas'.
func TestDAG(t *testing.T) {
	j := market.JobRecord{Spec: spec.Job{Tasks: []spec.Task{{Name: "a"}, {Name: "b", After: []string{"a"}}, {Name: "c", After: []string{"a"}}, {Name: "d", After: []string{"b", "c"}}}}}
	rec := func(task string, st market.TaskState) market.TaskRecord {
		return market.TaskRecord{Key: market.TaskKey{Task: task}, State: st}
	}
	j.Tasks = []market.TaskRecord{rec("a", market.TaskSucceeded), rec("b", market.TaskRunning), rec("b", market.TaskSucceeded), rec("c", market.TaskFailed), rec("d", market.TaskWaiting)}
	boxes, edges, w, h := dag(j)
	col := map[string]int{}
	state := map[string]string{}
	for _, b := range boxes {
		col[b.Name], state[b.Name] = (b.X-10)/(boxW+colGap), b.State
	}
	if col["a"] != 0 || col["b"] != 1 || col["c"] != 1 || col["d"] != 2 {
		t.Fatalf("columns %v, want a 0, b and c 1, d 2", col)
	}
	if state["a"] != "succeeded" || state["b"] != "running" || state["c"] != "failed" || state["d"] != "waiting" {
		t.Fatalf("states %v", state)
	}
	if len(edges) != 4 {
		t.Fatalf("%d edges, want 4", len(edges))
	}
	for _, e := range edges {
		if e.X2-e.X1 != colGap {
			t.Fatalf("edge %+v does not span one gap", e)
		}
	}
	if w != 10+3*boxW+2*colGap+10 || h != 10+2*boxH+rowGap+10 {
		t.Fatalf("size %dx%d", w, h)
	}
}
