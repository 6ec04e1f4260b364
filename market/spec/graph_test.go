package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// graphJob builds a valid job from name → dependencies, in the given order.
func graphJob(names []string, after map[string][]string) *Job {
	j := &Job{Name: "g", Type: "g", Priority: DefaultPriority}
	for _, n := range names {
		j.Tasks = append(j.Tasks, Task{Name: n, Command: []string{"x"}, After: after[n], Retries: DefaultRetries, Replicas: 1})
	}
	return j
}

// diamond is a → b, a → c, {b, c} → d, listed out of order.
func diamond() *Job {
	return graphJob([]string{"d", "c", "b", "a"}, map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}})
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		after map[string][]string
		want  string
	}{
		{"two", []string{"a", "b"}, map[string][]string{"a": {"b"}, "b": {"a"}}, "tasks: dependency cycle: a -> b -> a"},
		{"three", []string{"a", "b", "c"}, map[string][]string{"a": {"c"}, "b": {"a"}, "c": {"b"}}, "tasks: dependency cycle: a -> b -> c -> a"},
		{"three reversed", []string{"a", "b", "c"}, map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, "tasks: dependency cycle: a -> c -> b -> a"},
		{"behind a chain", []string{"s", "x", "y", "z"}, map[string][]string{"x": {"s", "z"}, "y": {"x"}, "z": {"y"}}, "tasks: dependency cycle: x -> y -> z -> x"},
		{"self", []string{"a", "d"}, map[string][]string{"d": {"a", "d"}}, `tasks[1].after: task "d" depends on itself`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := graphJob(tc.names, tc.after)
			err := j.Validate()
			if err == nil || !hasLine(err, tc.want) {
				t.Errorf("Validate = %v, want a line %q", err, tc.want)
			}
			if _, err := j.TopoOrder(); err == nil || !hasLine(err, tc.want) {
				t.Errorf("TopoOrder error = %v, want a line %q", err, tc.want)
			}
			if got := j.Ready(nil); len(got) == len(tc.names) {
				t.Errorf("Ready on a cycle returned every task: %v", got)
			}
		})
	}
}

func TestCycleFromSpec(t *testing.T) {
	spec := "name: j\ntasks:\n  - {name: a, command: [x], after: [c]}\n  - {name: b, command: [x], after: [a]}\n  - {name: c, command: [x], after: [b]}\n"
	ve := parseErrors(t, spec)
	if len(ve.Errors) != 1 || ve.Errors[0].String() != "tasks: dependency cycle: a -> b -> c -> a (line 2)" {
		t.Errorf("got:\n%v", ve)
	}
}

func TestTopoOrderDiamond(t *testing.T) {
	j := diamond()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := j.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	// Among ready tasks spec order wins: c is listed before b.
	if want := []string{"a", "c", "b", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TopoOrder = %v, want %v", got, want)
	}
	// A chain in spec order comes out unchanged.
	chain := graphJob([]string{"x", "y", "z"}, map[string][]string{"y": {"x"}, "z": {"y"}})
	if got, _ := chain.TopoOrder(); !reflect.DeepEqual(got, []string{"x", "y", "z"}) {
		t.Errorf("chain TopoOrder = %v", got)
	}
}

func TestTopoOrderErrors(t *testing.T) {
	tests := []struct {
		name string
		job  *Job
		want string
	}{
		{"unknown", graphJob([]string{"a"}, map[string][]string{"a": {"zz"}}), `tasks[0].after: unknown task "zz"`},
		{"duplicate name", graphJob([]string{"a", "a"}, nil), `tasks[1].name: duplicate task name "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.job.TopoOrder()
			var ve *ValidationError
			if !errors.As(err, &ve) || !hasLine(err, tc.want) {
				t.Errorf("TopoOrder error = %v, want a line %q", err, tc.want)
			}
		})
	}
}

func TestReadyDiamond(t *testing.T) {
	j := diamond()
	tests := []struct {
		done []string
		want []string
	}{
		{nil, []string{"a"}},
		{[]string{"a"}, []string{"c", "b"}},
		{[]string{"a", "b"}, []string{"c"}},
		{[]string{"a", "c"}, []string{"b"}},
		{[]string{"a", "b", "c"}, []string{"d"}},
		{[]string{"a", "b", "c", "d"}, nil},
		{[]string{"b", "c"}, []string{"d", "a"}}, // done is taken as given
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.done, ","), func(t *testing.T) {
			done := map[string]bool{}
			for _, n := range tc.done {
				done[n] = true
			}
			if got := j.Ready(done); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Ready(%v) = %v, want %v", tc.done, got, tc.want)
			}
		})
	}
	// A false entry means not done.
	if got := j.Ready(map[string]bool{"a": false}); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("Ready with a false entry = %v", got)
	}
}

func TestTaskLookup(t *testing.T) {
	j := diamond()
	task, ok := j.Task("b")
	if !ok || task.Name != "b" || !reflect.DeepEqual(task.After, []string{"a"}) {
		t.Fatalf("Task(b) = %+v, %v", task, ok)
	}
	task.Retries = 9
	if j.Tasks[2].Retries != 9 {
		t.Errorf("Task does not point into the job")
	}
	if task, ok := j.Task("nope"); ok || task != nil {
		t.Errorf("Task(nope) = %+v, %v", task, ok)
	}
}
