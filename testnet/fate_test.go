package testnet

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/cluster"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// One scenario, run twice: by the simulator's engine (market/cluster, the
// markets in virtual time) and by real nodes on loopback. Node 0, with no
// CPU, manages two jobs whose tasks run on nodes 1–3; it is killed while
// they run, its peers drop it and take its jobs over, and it restarts on
// its store while they still run. Both worlds must come to the same fate
// for every job: the recovery decisions are the same code.

// fateSpecs are the scenario's jobs; a task's runtime is its sleep.
var fateSpecs = map[string]string{
	"dag": `{"name": "dag", "tasks": [
		{"name": "a", "command": ["sleep", "4"], "resources": {"cpu": "1"}},
		{"name": "b", "after": ["a"], "command": ["sleep", "0.5"], "resources": {"cpu": "1"}}]}`,
	"wide": `{"name": "wide", "tasks": [
		{"name": "w", "replicas": 2, "command": ["sleep", "3"], "resources": {"cpu": "1"}}]}`,
}

// fate is what became of a job, in terms both worlds share.
type fate struct {
	State string
	// TakenOver: the job's manager at the end is not node 0; Forgotten:
	// node 0, restarted, neither manages nor holds it.
	TakenOver, Forgotten bool
	// Per task replica ("task/replica"): attempts in the record,
	// successful ones in its history, and processes started for it on
	// any node.
	Attempts, Successes, Starts map[string]int
}

func fateOf(rec market.JobRecord, origin market.NodeID, forgotten bool, starts map[string]int) fate {
	f := fate{State: string(rec.State), TakenOver: rec.Manager != origin, Forgotten: forgotten,
		Attempts: map[string]int{}, Successes: map[string]int{}, Starts: map[string]int{}}
	for _, tr := range rec.Tasks {
		k := tr.Key.Task + "/" + strconv.Itoa(tr.Key.Replica)
		f.Attempts[k] = tr.Attempts
		f.Starts[k] = starts[k]
		for _, h := range tr.History {
			if h.State == market.TaskSucceeded {
				f.Successes[k]++
			}
		}
	}
	return f
}

// wantFate is what both worlds must also agree with: every job succeeds
// under a new manager, every replica ran once, and the restarted node
// let go of them.
func wantFate(name string) fate {
	f := fate{State: string(market.JobSucceeded), TakenOver: true, Forgotten: true,
		Attempts: map[string]int{}, Successes: map[string]int{}, Starts: map[string]int{}}
	keys := map[string][]string{"dag": {"a/0", "b/0"}, "wide": {"w/0", "w/1"}}[name]
	for _, k := range keys {
		f.Attempts[k], f.Successes[k], f.Starts[k] = 1, 1, 1
	}
	return f
}

// TestManagerLossSameFate runs the scenario in both worlds and compares.
func TestManagerLossSameFate(t *testing.T) {
	sim := simulatedFates(t)
	real := realFates(t)
	for _, name := range slices.Sorted(maps.Keys(fateSpecs)) {
		if !reflect.DeepEqual(sim[name], real[name]) {
			t.Errorf("%s: simulated %+v, real %+v", name, sim[name], real[name])
		}
		if want := wantFate(name); !reflect.DeepEqual(sim[name], want) {
			t.Errorf("%s: %+v, want %+v", name, sim[name], want)
		}
	}
}

// fateObserver counts the task processes the simulated nodes start.
type fateObserver struct {
	cluster.NoObserver
	starts map[string]map[string]int // job → "task/replica" → starts
}

func (o *fateObserver) Started(_ int, t market.TaskSpec) {
	if o.starts[t.Key.Job] == nil {
		o.starts[t.Key.Job] = map[string]int{}
	}
	o.starts[t.Key.Job][t.Key.Task+"/"+strconv.Itoa(t.Key.Replica)]++
}

func simulatedFates(t *testing.T) map[string]fate {
	const interval = DefaultInterval
	var mcs []market.Config
	for i := range 4 {
		cpu := int64(2000)
		if i == 0 {
			cpu = 0
		}
		mcs = append(mcs, market.Config{Self: market.NodeID(fmt.Sprintf("n%d", i)), Seed: int64(i + 1), AdvertInterval: interval,
			Capacity: resource.Vector{CPU: cpu, Memory: 4 << 30, Disk: 1 << 40}})
	}
	q := cluster.NewQueue()
	obs := &fateObserver{starts: map[string]map[string]int{}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cl, err := cluster.New(cluster.Config{Markets: mcs, Start: start, AdvertEvery: interval, Clock: q, Observer: obs,
		Faults: true, TickEvery: 10 * time.Millisecond, Runtime: func(_ int, ts market.TaskSpec) (time.Duration, int) {
			secs, err := strconv.ParseFloat(ts.Command[1], 64)
			if err != nil {
				t.Fatalf("runtime of %v: %v", ts.Command, err)
			}
			return time.Duration(secs * float64(time.Second)), 0
		}})
	if err != nil {
		t.Fatal(err)
	}
	cl.Start()
	q.RunUntil(cl, time.Second) // the views fill
	for name, text := range fateSpecs {
		js, err := spec.Parse([]byte(text), cl.Time())
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Submit(0, name, *js); err != nil {
			t.Fatal(err)
		}
	}
	running := func() bool {
		for name := range fateSpecs {
			j, ok := cl.Node(0).Market.Job(name)
			if !ok || j.Tasks[0].State != market.TaskRunning {
				return false
			}
		}
		return true
	}
	// runUntil runs the simulated cluster until cond holds, for at most
	// limit of virtual time.
	runUntil := func(limit time.Duration, what string, cond func() bool) {
		for deadline := q.Now() + limit; !cond(); {
			if q.Now() > deadline {
				t.Fatalf("simulated: %s not within %v", what, limit)
			}
			q.RunUntil(cl, q.Now()+10*time.Millisecond)
		}
	}
	runUntil(10*time.Second, "the tasks running after the submits", running)
	cl.Crash(0)
	q.RunUntil(cl, q.Now()+3*interval) // peers drop it after three silent intervals
	cl.Gone(0)
	// As the real world does: restart once the jobs were taken over (a
	// copy holder waits for a silent manager three intervals and a lease
	// since its last push).
	takenOver := func() bool {
		for name := range fateSpecs {
			found := false
			for i := 1; i < cl.N(); i++ {
				if _, ok := cl.Node(i).Market.Job(name); ok {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	runUntil(20*time.Second, "the jobs taken over after node 0 was dropped", takenOver)
	if err := cl.Restart(0); err != nil {
		t.Fatal(err)
	}
	q.RunUntil(cl, q.Now()+30*time.Second)
	if v := cl.Violations(); len(v) > 0 {
		t.Fatalf("simulated: broken invariants: %v", v)
	}
	out := map[string]fate{}
	for name := range fateSpecs {
		var rec market.JobRecord
		found := false
		for i := 1; i < cl.N(); i++ {
			if r, ok := cl.Node(i).Market.Job(name); ok {
				rec, found = r, true
			}
		}
		_, managed := cl.Node(0).Market.Job(name)
		if !found && managed {
			rec, found = cl.Node(0).Market.Job(name)
		}
		if !found {
			t.Fatalf("simulated: no node manages %s", name)
		}
		forgotten := !managed && !cl.Node(0).Market.Holds(name)
		out[name] = fateOf(rec, "n0", forgotten, obs.starts[name])
	}
	return out
}

func realFates(t *testing.T) map[string]fate {
	net := New(t, 4, Options{Resources: managerCannotRun, Topology: Star})
	net.WaitConverged(10 * time.Second)
	ids := map[string]string{}
	for name, text := range fateSpecs {
		id, err := net.Node(0).Submit(text)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range ids {
				logEvents(t, net, id)
			}
		}
	})
	origin := market.NodeID(net.Node(0).ID().String())
	waitfor.Cond(t, 10*time.Second, "the first tasks to run", func() bool {
		for _, id := range ids {
			s, err := net.Node(0).Status(id)
			if err != nil || s.Tasks[0].State != string(market.TaskRunning) {
				return false
			}
		}
		return true
	})
	net.Kill(0)
	waitfor.Cond(t, 20*time.Second, "the jobs to be taken over", func() bool {
		for _, id := range ids {
			s, err := net.Node(1).Status(id)
			if err != nil || s.Manager == string(origin) {
				return false
			}
		}
		return true
	})
	restarted := net.Restart(0)
	ctx := context.Background()
	waitfor.Cond(t, 30*time.Second, "the jobs to end and node 0 to let go of them", func() bool {
		held, err := restarted.Jobs(ctx)
		if err != nil {
			return false
		}
		for _, id := range ids {
			s, err := net.Node(1).Status(id)
			if err != nil || (s.State != "succeeded" && s.State != "failed") {
				return false
			}
			if slices.ContainsFunc(held, func(j market.JobRecord) bool { return j.ID == id }) {
				return false
			}
		}
		return true
	})
	out := map[string]fate{}
	for name, id := range ids {
		rec, err := net.Node(1).Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		held, err := restarted.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forgotten := !slices.ContainsFunc(held, func(j market.JobRecord) bool { return j.ID == id })
		starts := map[string]int{}
		for _, nd := range net.Up() {
			exs, err := nd.Executions(id)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range exs {
				starts[x.Key.Task+"/"+strconv.Itoa(x.Key.Replica)]++
			}
		}
		out[name] = fateOf(rec, origin, forgotten, starts)
	}
	return out
}
