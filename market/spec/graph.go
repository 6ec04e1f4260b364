package spec

import (
	"container/heap"
	"strings"

	"github.com/agora-sched/agora/market/names"
)

// deps resolves each task's After names to task indices, reporting empty,
// unknown, self and repeated dependencies to l and leaving them out. A name
// used by several tasks resolves to the first.
func (j *Job) deps(l *errorList) [][]int {
	byName := make(map[string]int, len(j.Tasks))
	for i, t := range j.Tasks {
		if _, dup := byName[t.Name]; !dup && t.Name != "" {
			byName[t.Name] = i
		}
	}
	deps := make([][]int, len(j.Tasks))
	for i, t := range j.Tasks {
		p := field(index("tasks", i), "after")
		seen := make(map[string]bool, len(t.After))
		for _, a := range t.After {
			k, known := byName[a]
			switch {
			case a == "":
				l.add(p, "empty task name")
			case seen[a]:
				l.add(p, "duplicate dependency %s", quote(a))
			case a == t.Name:
				l.add(p, "task %s depends on itself", quote(a))
			case !known:
				l.add(p, "unknown task %s", quote(a))
			default:
				deps[i] = append(deps[i], k)
			}
			seen[a] = true
		}
	}
	return deps
}

// order sorts tasks topologically: each task after its dependencies and,
// among tasks ready together, in spec order. If the graph has a cycle it
// returns one, as task indices with each task running before the next.
func order(deps [][]int) (sorted, cycle []int) {
	n := len(deps)
	waiting := make([]int, n) // unfinished dependencies
	next := make([][]int, n)  // dependents
	ready := &minHeap{}
	for i, ds := range deps {
		waiting[i] = len(ds)
		for _, d := range ds {
			next[d] = append(next[d], i)
		}
		if len(ds) == 0 {
			heap.Push(ready, i)
		}
	}
	sorted = make([]int, 0, n)
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		sorted = append(sorted, i)
		for _, s := range next[i] {
			if waiting[s]--; waiting[s] == 0 {
				heap.Push(ready, s)
			}
		}
	}
	if len(sorted) == n {
		return sorted, nil
	}
	return sorted, findCycle(deps, waiting)
}

// findCycle returns a cycle among the tasks left waiting by order. Every
// such task waits on another such task, so walking from one to a waiting
// dependency must come back to a task already seen.
func findCycle(deps [][]int, waiting []int) []int {
	start := -1
	for i, w := range waiting {
		if w > 0 {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	pos := map[int]int{}
	var path []int
	for cur := start; ; {
		if at, ok := pos[cur]; ok {
			path = path[at:]
			break
		}
		pos[cur] = len(path)
		path = append(path, cur)
		nxt := -1
		for _, d := range deps[cur] {
			if waiting[d] > 0 {
				nxt = d
				break
			}
		}
		if nxt < 0 {
			return nil // unreachable: cur would not be waiting
		}
		cur = nxt
	}
	// path runs from each task to one it waits on; reverse it to run
	// forward, then start at the task that comes first in the spec.
	for a, b := 0, len(path)-1; a < b; a, b = a+1, b-1 {
		path[a], path[b] = path[b], path[a]
	}
	low := 0
	for i, t := range path {
		if t < path[low] {
			low = i
		}
	}
	return append(path[low:], path[:low]...)
}

// cycleText renders a cycle as "a -> b -> a".
func (j *Job) cycleText(cycle []int) string {
	names := make([]string, 0, len(cycle)+1)
	for _, i := range cycle {
		names = append(names, displayName(j.Tasks[i].Name))
	}
	names = append(names, names[0])
	return strings.Join(names, " -> ")
}

// displayName shows a valid task name as is and any other quoted, so a
// message stays on one line.
func displayName(name string) string {
	if names.TaskName(name) {
		return name
	}
	return quote(name)
}

// TopoOrder returns the task names in an order that runs every task after
// the tasks it depends on; among tasks that could run together, spec
// order wins, so the result is deterministic. It returns a
// *ValidationError for duplicate task names, unknown or self dependencies,
// or a dependency cycle.
func (j *Job) TopoOrder() ([]string, error) {
	l := &errorList{}
	j.checkNames(l)
	deps := j.deps(l)
	if err := l.err(); err != nil {
		return nil, err
	}
	sorted, cycle := order(deps)
	if cycle != nil {
		l.add("tasks", "dependency cycle: %s", j.cycleText(cycle))
		return nil, l.err()
	}
	names := make([]string, len(sorted))
	for k, i := range sorted {
		names[k] = j.Tasks[i].Name
	}
	return names, nil
}

// Ready returns, in spec order, the tasks that are not done and whose
// dependencies are all done; done is keyed by task name. It returns nil
// when no task is ready.
func (j *Job) Ready(done map[string]bool) []string {
	var ready []string
	for _, t := range j.Tasks {
		if done[t.Name] {
			continue
		}
		ok := true
		for _, a := range t.After {
			if !done[a] {
				ok = false
				break
			}
		}
		if ok {
			ready = append(ready, t.Name)
		}
	}
	return ready
}

// minHeap is a heap of task indices, smallest first.
type minHeap []int

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(a, b int) bool { return h[a] < h[b] }
func (h minHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ancestry returns whether task a is an ancestor of task b (b depends on
// it, directly or not), given the dependencies and a topological order;
// the closure is computed only when first asked.
func ancestry(deps [][]int, sorted []int) func(a, b int) bool {
	var anc []map[int]bool
	return func(a, b int) bool {
		if anc == nil {
			anc = make([]map[int]bool, len(deps))
			for _, i := range sorted {
				anc[i] = map[int]bool{}
				for _, d := range deps[i] {
					anc[i][d] = true
					for x := range anc[d] {
						anc[i][x] = true
					}
				}
			}
		}
		return anc[b][a]
	}
}
