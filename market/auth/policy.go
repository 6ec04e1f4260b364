package auth

import (
	"fmt"
	"slices"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

// Refusal is a request refused by a rule; Rule names it (for the user,
// and the metrics), the message says what was asked and why not.
type Refusal struct {
	Rule string
	Msg  string
}

func (r *Refusal) Error() string { return fmt.Sprintf("refused by rule %s: %s", r.Rule, r.Msg) }

// Rules a Refusal names.
const (
	RuleOwner       = "owner-or-admin"
	RuleAdmin       = "admin-only"
	RuleMaxCPU      = "quota.max-cpu"
	RuleMaxGPU      = "quota.max-gpu"
	RuleMaxPriority = "quota.max-priority"
	RuleSites       = "quota.sites"
	// The network-wide running limits (market userlimits.go): a replica
	// past one waits.
	RuleMaxRunningCPU  = "quota.max-running-cpu"
	RuleMaxRunningGPU  = "quota.max-running-gpu"
	RuleMaxRunningJobs = "quota.max-running-jobs"
)

// Allow decides whether user id may do act on a job owned by owner: its
// owner and admins may do anything to it; listing jobs is everyone's
// (each sees their own), draining a node an admin's.
func Allow(act Action, id Identity, owner string) error {
	switch {
	case id.Admin:
		return nil
	case act == ActJobs, act == ActPeers:
		return nil
	case act == ActDrain, act == ActUndrain:
		return &Refusal{Rule: RuleAdmin, Msg: fmt.Sprintf("user %s may not %s a node: only admins may", id.Name, act)}
	case id.Name == owner:
		return nil
	}
	return &Refusal{Rule: RuleOwner, Msg: fmt.Sprintf("user %s may not %s a job of %s: only its owner and admins may", id.Name, verb(act), owner)}
}

func verb(act Action) string {
	switch act {
	case ActStatus:
		return "see the detail of"
	case ActSpec:
		return "read the spec of"
	case ActLogs:
		return "read the logs of"
	}
	return string(act)
}

// CheckJob checks every task of a job against a user's quota, at
// submission.
func CheckJob(user string, q Quota, js *spec.Job) error {
	if q.MaxPriority != Unlimited && js.Priority > q.MaxPriority {
		return &Refusal{Rule: RuleMaxPriority, Msg: fmt.Sprintf("user %s may submit at priority %d at most; the job asks for %d", user, q.MaxPriority, js.Priority)}
	}
	for i := range js.Tasks {
		if err := CheckTask(user, q, js.Tasks[i].Name, js.Tasks[i].Request, js.Priority, ""); err != nil {
			return err
		}
	}
	return nil
}

// CheckTask checks one task replica's request and its job's priority
// against a user's quota; nodeSite, when set, is the site of the node
// that would run it.
func CheckTask(user string, q Quota, task string, r resource.Request, priority int, nodeSite string) error {
	if q.MaxPriority != Unlimited && priority > q.MaxPriority {
		return &Refusal{Rule: RuleMaxPriority, Msg: fmt.Sprintf("user %s may submit at priority %d at most; the job asks for %d", user, q.MaxPriority, priority)}
	}
	if q.MaxCPU != Unlimited && r.CPU > q.MaxCPU {
		return &Refusal{Rule: RuleMaxCPU, Msg: fmt.Sprintf("task %s asks for %s CPUs; user %s may ask for %s at most", task, milli(r.CPU), user, milli(q.MaxCPU))}
	}
	if q.MaxGPU != Unlimited {
		gpus := r.GPU.Count
		if r.GPU.Share > 0 && gpus == 0 {
			gpus = 1
		}
		if gpus > q.MaxGPU {
			return &Refusal{Rule: RuleMaxGPU, Msg: fmt.Sprintf("task %s asks for %d GPUs; user %s may ask for %d at most", task, gpus, user, q.MaxGPU)}
		}
	}
	if len(q.Sites) > 0 {
		site := r.Site
		if site == "" {
			site = nodeSite
		}
		if site != "" && !slices.Contains(q.Sites, site) {
			return &Refusal{Rule: RuleSites, Msg: fmt.Sprintf("task %s would run at site %s; user %s may use sites %v", task, site, user, q.Sites)}
		}
	}
	return nil
}

func milli(v int64) string {
	if v%1000 == 0 {
		return fmt.Sprint(v / 1000)
	}
	return fmt.Sprintf("%.3g", float64(v)/1000)
}
