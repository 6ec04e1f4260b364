package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// An array task (tasks[].array, as Slurm's --array) runs one replica per
// index of its expression, each with its index in AGORA_ARRAY_INDEX:
//
//	0-999%50     indices 0 to 999, at most 50 running at once
//	1,3,10-20:5  1, 3, 10, 15, 20
//
// Items are N, N-M or N-M:STEP, comma-separated, in increasing order and
// without repeats; a %K suffix throttles the task to K replicas awarded
// or running at a time. Replica r runs index Indices()[r].

// MaxArrayIndex bounds an array index.
const MaxArrayIndex = 1<<31 - 1

// Array is a parsed array expression.
type Array struct {
	Indices  []int
	Throttle int // 0: none
}

// ParseArray reads an array expression; its error says what is wrong.
func ParseArray(s string) (Array, error) {
	var a Array
	body, throttle, hasThrottle := strings.Cut(s, "%")
	if hasThrottle {
		k, err := strconv.Atoi(throttle)
		if err != nil || k < 1 || k > MaxReplicas {
			return a, fmt.Errorf("throttle %q: want %%K with K in 1..%d", throttle, MaxReplicas)
		}
		a.Throttle = k
	}
	if strings.TrimSpace(body) == "" {
		return a, fmt.Errorf("no indices (want e.g. 0-99 or 0-999%%50)")
	}
	last := -1
	for _, item := range strings.Split(body, ",") {
		item = strings.TrimSpace(item)
		span, stepText, hasStep := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(span, "-")
		from, err1 := arrayIndex(lo)
		to, err2 := from, error(nil)
		if isRange {
			to, err2 = arrayIndex(hi)
		}
		step := 1
		var err3 error
		if hasStep {
			if !isRange {
				return a, fmt.Errorf("%q: a step needs a range (N-M:STEP)", item)
			}
			step, err3 = strconv.Atoi(stepText)
			if err3 == nil && step < 1 {
				err3 = fmt.Errorf("below 1")
			}
		}
		switch {
		case err1 != nil || err2 != nil:
			return a, fmt.Errorf("%q: want N, N-M or N-M:STEP with indices 0..%d", item, MaxArrayIndex)
		case err3 != nil:
			return a, fmt.Errorf("%q: bad step", item)
		case to < from:
			return a, fmt.Errorf("%q: the range runs backwards", item)
		case from <= last:
			return a, fmt.Errorf("%q: indices must increase and not repeat", item)
		}
		for i := from; i <= to; i += step {
			if len(a.Indices) == MaxReplicas {
				return a, fmt.Errorf("more than %d indices (split the job)", MaxReplicas)
			}
			a.Indices = append(a.Indices, i)
			last = i
			if i > MaxArrayIndex-step {
				break
			}
		}
	}
	return a, nil
}

func arrayIndex(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > MaxArrayIndex {
		return 0, fmt.Errorf("bad index")
	}
	return n, nil
}

// MaxArrayValueLen bounds one element's parameter (array_values), which
// travels in its environment.
const MaxArrayValueLen = 4 << 10

// checkArrayValues checks an array's element parameters: one per index,
// each short enough for an environment variable and free of NUL.
func checkArrayValues(l *errorList, path string, t Task) {
	if t.Array == "" {
		l.add(path, "needs array: the values are the parameters of an array's elements, one per index")
		return
	}
	if a, err := ParseArray(t.Array); err == nil && len(a.Indices) != len(t.ArrayValues) {
		l.add(path, "%d values for %d indices: give one per index of array %q", len(t.ArrayValues), len(a.Indices), t.Array)
	}
	for i, v := range t.ArrayValues {
		switch {
		case len(v) > MaxArrayValueLen:
			l.add(index(path, i), "%d bytes, over the limit of %d", len(v), MaxArrayValueLen)
		case strings.IndexByte(v, 0) >= 0:
			l.add(index(path, i), "holds a NUL byte, which an environment variable cannot")
		}
	}
}

// ArrayThrottle is the throttle (%K) of t's array, 0 for none, read
// without parsing the indices: the scheduler asks per replica.
func (t *Task) ArrayThrottle() int {
	_, k, ok := strings.Cut(t.Array, "%")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(k)
	if err != nil || n < 1 || n > MaxReplicas {
		return 0
	}
	return n
}

// ArrayOf is t's parsed array, with ok false for a task that is not one.
// A validated task's expression parses; one that does not reads as none.
func (t *Task) ArrayOf() (Array, bool) {
	if t.Array == "" {
		return Array{}, false
	}
	a, err := ParseArray(t.Array)
	return a, err == nil
}
