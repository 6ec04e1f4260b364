package resource

import "strings"

// Limits is a set of per-task limits: those a task asks its node to
// enforce, or those a node can enforce.
type Limits uint8

// The limits. A task asks for LimitCPU when its spec names a CPU amount
// and for LimitMemory when it names a memory amount; LimitPids is a
// node's own bound on every task's processes (agora node --task-pids).
const (
	LimitCPU Limits = 1 << iota
	LimitMemory
	LimitPids

	// AllLimits is every limit this version knows.
	AllLimits = LimitCPU | LimitMemory | LimitPids
	// TaskLimits are the limits a task may ask for.
	TaskLimits = LimitCPU | LimitMemory
)

var limitNames = []struct {
	l    Limits
	name string
}{{LimitCPU, "cpu"}, {LimitMemory, "memory"}, {LimitPids, "pids"}}

// String lists the limits by name, comma-separated; "none" for the empty
// set.
func (l Limits) String() string {
	var names []string
	for _, n := range limitNames {
		if l&n.l != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Enforcement is what a node does with the limits tasks ask for: the
// limits it cannot enforce, and whether it runs a task asking for one of
// them anyway (agora node --allow-unenforced-limits). The zero value
// enforces every limit.
type Enforcement struct {
	Missing    Limits
	Unenforced bool
}

// Enforces is the set of limits e enforces.
func (e Enforcement) Enforces() Limits { return AllLimits &^ e.Missing }

// Refusal is the reason a node with enforcement e refuses a task asking
// for req's limits, or "" when it takes it: a node that cannot enforce a
// limit a task asks for does not run the task unless it was told to run
// such tasks unenforced.
func (e Enforcement) Refusal(req Request) string {
	missing := req.Limits & e.Missing
	if missing == 0 || e.Unenforced {
		return ""
	}
	return "limits: " + missing.String() + " not enforced on this node"
}
