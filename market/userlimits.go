package market

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
)

// Network-wide running limits per user (auth.Quota's MaxRunning*). No
// node sees all of a user's work: each manager knows its own jobs. So
// each manager advertises, per limited user, what that user's jobs hold
// on it (replicas awarded or running, and the jobs with any) and what
// waits there (ready replicas and jobs not yet running): UserUsage, in
// its signed adverts. A manager about to place a replica of a limited
// user's job adds its own exact usage to its peers' advertised usage:
// the headroom under the limit. Several managers may see the same
// headroom at once; each takes only its share of it, in proportion to
// the work waiting on it (the lowest node ID among them takes what the
// rounding leaves), so that, while the views agree, together they never
// pass the limit. A replica past its share waits, its reason naming the
// rule, and is looked at again every userLimitRetry.
//
// A new job of a limited user waits an advert interval and a half before
// its first placement (demandSettles), so that jobs submitted at once to
// several managers are in every view before any is placed. The bound:
// the parts are worked out from the demands as each manager's view has
// them, one advert interval old at most; while a manager's view of
// another is stale by a job that arrived there within the wait or a
// replica that ended, the two may count the limit differently, and the
// user's jobs may pass it by the replicas the difference lets one
// manager place (each within the part it computed), until the next
// adverts; rounding gives the lowest node ID what the parts leave.

// UserUsage is what one user's jobs hold, and wait for, on the jobs a
// node manages: CPU in millicores, GPUs in thousandths.
type UserUsage struct {
	User        string
	RunningCPU  int64
	RunningGPU  int64
	RunningJobs int
	WaitingCPU  int64
	WaitingGPU  int64
	WaitingJobs int
}

// maxAdvertUsers bounds the users an advert names.
const maxAdvertUsers = 64

// userLimitRetry is how often a replica held back by its user's limit is
// looked at again.
const userLimitRetry = time.Second

// demandSettles is how long a limited user's new job waits before its
// first placement: an advert interval and a half, so that the node's
// next advert, with the job's demand, has reached its peers, and theirs
// this node, before any of them places what was submitted at once to
// several (otherwise each would see the whole limit free).
func demandSettles(cfg Config) time.Duration { return cfg.AdvertInterval * 3 / 2 }

func gpuMilli(r resource.Request) int64 { return int64(r.GPU.Count)*1000 + r.GPU.Share }

// limitedUser is the quota of a job's owner when it bounds the user's
// running work.
func (au *auctioneer) limitedUser(j *JobRecord) (auth.Quota, bool) {
	if j.Owner == "" || len(j.Ticket) == 0 || !au.tix.trusted() {
		return auth.Quota{}, false
	}
	info := au.tix.byJob[j.ID] // checked already: its ID is its ticket's
	if info == nil {
		var err error
		if info, err = au.tix.job(au.now, j.ID, j.Ticket); err != nil {
			return auth.Quota{}, false
		}
	}
	if !info.user.Quota.Running() {
		return auth.Quota{}, false
	}
	return info.user.Quota, true
}

// addJob adds what job j holds and waits for to u.
func (sh *shared) addJob(u *UserUsage, j *JobRecord) {
	running, waiting := false, false
	for i := range j.Tasks {
		t := &j.Tasks[i]
		ts, _ := j.Spec.Task(t.Key.Task)
		placing := t.State == TaskPending && (sh.auctions[t.Key] != nil || sh.gangs[gangID(j.ID, t.Key.Task)] != nil)
		switch {
		case t.State == TaskAwarded, t.State == TaskRunning, placing:
			// A replica being placed counts as running: its round may
			// award it any moment.
			running = true
			u.RunningCPU += ts.Request.CPU
			u.RunningGPU += gpuMilli(ts.Request)
		case t.State == TaskPending:
			waiting = true
			u.WaitingCPU += ts.Request.CPU
			u.WaitingGPU += gpuMilli(ts.Request)
		}
	}
	switch {
	case running:
		u.RunningJobs++
	case waiting:
		u.WaitingJobs++
	}
}

// limitedUsage is what each limited user's unfinished jobs managed here
// hold and wait for, in one pass over them.
func (au *auctioneer) limitedUsage() map[string]*UserUsage {
	out := map[string]*UserUsage{}
	if !au.tix.trusted() {
		return out
	}
	limited := map[string]bool{}
	for _, id := range au.active {
		j := au.jobs[id]
		if j == nil || j.Owner == "" || j.State.Terminal() {
			continue
		}
		ok, seen := limited[j.Owner]
		if !seen {
			_, ok = au.limitedUser(j)
			limited[j.Owner] = ok
		}
		if !ok {
			continue
		}
		u := out[j.Owner]
		if u == nil {
			u = &UserUsage{User: j.Owner}
			out[j.Owner] = u
		}
		au.addJob(u, j)
	}
	return out
}

// userUsage is what user's unfinished jobs managed here hold and wait
// for.
func (au *auctioneer) userUsage(user string) *UserUsage {
	u := &UserUsage{User: user}
	for _, id := range au.active {
		if j := au.jobs[id]; j != nil && j.Owner == user && !j.State.Terminal() {
			au.addJob(u, j)
		}
	}
	return u
}

// UserUsage lists what the limited users' jobs managed here hold and
// wait for, for this node's adverts; at most maxAdvertUsers, by name.
func (m *Market) UserUsage() []UserUsage {
	usage := m.auc.limitedUsage()
	users := slices.Sorted(maps.Keys(usage))
	if len(users) > maxAdvertUsers {
		users = users[:maxAdvertUsers]
	}
	out := make([]UserUsage, 0, len(users))
	for _, u := range users {
		out = append(out, *usage[u])
	}
	return out
}

// overUserLimit says why replica t of job j must wait for its user's
// running limit, or "" when it may be placed now. Each manager is
// entitled to a part of the limit in proportion to its demand (what its
// jobs of the user run and wait for), in whole replicas, what the
// rounding leaves going one each to the nodes in ID order: demands
// change only as jobs arrive and replicas end, so the parts stay put
// while a manager places, and while the views agree they add up to the
// limit at most.
func (au *auctioneer) overUserLimit(j *JobRecord, t *TaskRecord, usage map[string]*UserUsage) string {
	q, ok := au.limitedUser(j)
	if !ok {
		return ""
	}
	if settled := j.Submitted.Add(demandSettles(au.cfg)); au.now.Before(settled) {
		return fmt.Sprintf("user %s has network-wide running limits: a new job waits %v for its demand to reach the other nodes' views",
			j.Owner, settled.Sub(au.now).Round(time.Millisecond))
	}
	ts, _ := j.Spec.Task(t.Key.Task)
	want := ts.Request
	if n := ts.Replicas; j.isGang(t.Key.Task) && n > 1 {
		// A gang starts whole: all of it must fit.
		want.CPU *= int64(n)
		want.GPU.Count *= n
		want.GPU.Share *= int64(n)
	}
	own := UserUsage{User: j.Owner}
	if u := usage[j.Owner]; u != nil {
		own = *u
	}
	type node struct {
		id      NodeID
		running [3]int64
		demand  [3]int64
	}
	of := func(id NodeID, u UserUsage) node {
		return node{id, [3]int64{u.RunningCPU, u.RunningGPU, int64(u.RunningJobs)},
			[3]int64{u.RunningCPU + u.WaitingCPU, u.RunningGPU + u.WaitingGPU, int64(u.RunningJobs + u.WaitingJobs)}}
	}
	nodes := []node{of(au.cfg.Self, own)}
	for id, p := range au.view {
		for _, u := range p.Users {
			if u.User == j.Owner && id != au.cfg.Self {
				nodes = append(nodes, of(id, u))
			}
		}
	}
	slices.SortFunc(nodes, func(a, b node) int { return strings.Compare(string(a.id), string(b.id)) })

	self := slices.IndexFunc(nodes, func(n node) bool { return n.id == au.cfg.Self })
	jobRunning := false
	for i := range j.Tasks {
		tr := &j.Tasks[i]
		if s := tr.State; s == TaskAwarded || s == TaskRunning || au.auctions[tr.Key] != nil {
			jobRunning = true
		}
	}
	cores := func(n int64) string { return fmt.Sprintf("%g cores", float64(n)/1000) }
	gpus := func(n int64) string { return fmt.Sprintf("%g GPUs", float64(n)/1000) }
	jobs := func(n int64) string { return fmt.Sprintf("%d jobs", n) }
	for _, d := range []struct {
		rule  string
		max   int64
		want  int64
		unit  func(int64) string
		index int
	}{
		{auth.RuleMaxRunningCPU, q.MaxRunningCPU, want.CPU, cores, 0},
		{auth.RuleMaxRunningGPU, int64(q.MaxRunningGPU) * 1000, gpuMilli(want), gpus, 1},
		{auth.RuleMaxRunningJobs, int64(q.MaxRunningJobs), 1, jobs, 2},
	} {
		if d.max < 0 || d.want == 0 || (d.index == 2 && jobRunning) {
			continue
		}
		var used, demand int64
		for _, n := range nodes {
			used += n.running[d.index]
			demand += n.demand[d.index]
		}
		if used+d.want > d.max {
			return fmt.Sprintf("user %s is at the network-wide limit %s: %s of %s running", j.Owner, d.rule, d.unit(used), d.unit(d.max))
		}
		if demand <= d.max {
			continue // room for everything that waits, everywhere
		}
		// Parts in whole replicas of this size: each node's demand in
		// them, the limit's replicas shared in proportion, what the
		// rounding leaves one each to the nodes in ID order.
		units := d.max / d.want
		demands := make([]int64, len(nodes))
		var total int64
		for i, n := range nodes {
			demands[i] = (n.demand[d.index] + d.want - 1) / d.want
			total += demands[i]
		}
		alloc := make([]int64, len(nodes))
		left := units
		for i := range nodes {
			alloc[i] = units * demands[i] / total
			left -= alloc[i]
		}
		for i := 0; left > 0 && i < len(nodes); i++ {
			if alloc[i] < demands[i] {
				alloc[i]++
				left--
			}
		}
		part := alloc[self] * d.want
		if nodes[self].running[d.index]+d.want > part {
			return fmt.Sprintf("user %s is at this node's part of the network-wide limit %s: %s of its %s running here, %s of %s in all, with work waiting on %d other nodes",
				j.Owner, d.rule, d.unit(nodes[self].running[d.index]), d.unit(part), d.unit(used), d.unit(d.max), len(nodes)-1)
		}
	}
	return ""
}
