package market

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

func TestGPUTaskGoesToGPUNode(t *testing.T) {
	c := newCluster(t, cpuNode(4), gpuNode(16, 2, 40<<30, "A100"), cpuNode(8))
	tk := task("gpu", 1000)
	tk.Request.GPU = resource.GPURequest{Count: 1}
	var env []int
	c.run = func(s TaskSpec, n NodeID) (int, time.Duration) { return 0, time.Second }
	c.submit(0, "j1", job("gpu", tk))
	c.until(10*time.Second, "job to succeed", func() bool { return c.job(0, "j1").State == JobSucceeded })
	j := c.job(0, "j1")
	if j.Tasks[0].Node != "n1" {
		t.Fatalf("gpu task ran on %s, want n1", j.Tasks[0].Node)
	}
	_ = env
}

func TestManyTasksMakespan(t *testing.T) {
	c := newCluster(t, cpuNode(4), gpuNode(16, 2, 40<<30, "A100"), cpuNode(8))
	var tasks []spec.Task
	for i := 0; i < 40; i++ {
		tasks = append(tasks, task(fmt.Sprintf("t%02d", i), 2000))
	}
	c.submit(0, "j", job("sleep", tasks...))
	start := c.now
	c.until(30*time.Second, "job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	makespan := c.now.Sub(start)
	// 40 tasks × 2 CPU on 28 CPU = 14 slots: 3 whole waves of 1 s.
	bound := 3 * time.Second
	t.Logf("makespan %v, bound %v, ratio %.2f", makespan, bound, makespan.Seconds()/bound.Seconds())
	if makespan > bound*3/2 {
		t.Fatalf("makespan %v > 1.5 × %v; events:\n%s", makespan, bound, c.eventLog())
	}
}

// TestUnplaceableWaitsForNode (issue 47, done-when 4): a task no node
// could ever hold waits, saying why, its rounds backing off from
// ParkEvery; a node that could hold it joins and runs it at once.
func TestUnplaceableWaitsForNode(t *testing.T) {
	c := newCluster(t, cpuNode(4), cpuNode(8), gpuNode(16, 2, 40<<30, "A100"))
	c.cut["n2"] = true // the GPU server has not joined yet
	c.nodes[0].PeerGone(c.now, "n2")
	c.nodes[1].PeerGone(c.now, "n2")
	c.drain()
	tk := task("train", 1000)
	tk.Request.GPU = resource.GPURequest{Count: 1}
	c.submit(0, "j", job("train", tk))
	end := c.now.Add(5 * time.Minute)
	for c.now.Before(end) {
		c.step()
	}
	j := c.job(0, "j")
	if j.State != JobRunning && j.State != JobPending || j.Tasks[0].State != TaskPending {
		t.Fatalf("after 5 minutes: job %s, task %s (%s)", j.State, j.Tasks[0].State, j.Reason)
	}
	if w := j.Tasks[0].Waiting; !strings.HasPrefix(w, "no node fits: gpu: none") {
		t.Fatalf("waiting %q, want the missing GPU named", w)
	}
	// Parked: after ParkAfter, rounds ParkEvery apart and then further
	// (each round broadcasts: no node in the view could hold it).
	// Unparked, rounds 2 s apart would make 150.
	if rounds, most := c.sent["broadcast/cfp"], 12+int(5*time.Minute/ParkEvery); rounds > most {
		t.Fatalf("%d rounds in 5 minutes of waiting, want at most %d", rounds, most)
	} else {
		t.Logf("%d rounds in 5 minutes of waiting", rounds)
	}

	delete(c.cut, "n2") // it joins: the next adverts carry it
	joined := c.now
	c.until(10*time.Second, "the task to start on the GPU server", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	if took := c.now.Sub(joined); took > 4*time.Second {
		t.Fatalf("started %v after the node joined, want at once (not at the next parked round)", took)
	}
	if n := c.job(0, "j").Tasks[0].Node; n != "n2" {
		t.Fatalf("runs on %s", n)
	}
}

func TestUnplaceableFailsWithReason(t *testing.T) {
	c := newCluster(t, cpuNode(4), gpuNode(16, 2, 40<<30, "A100"), cpuNode(8))
	tk := task("big", 1000)
	tk.Request.GPU = resource.GPURequest{Count: 1, Memory: 200 << 30}
	js := job("big", tk)
	js.PendingTimeout = 10 * time.Second
	c.submit(0, "j", js)
	start := c.now
	c.until(20*time.Second, "job to fail", func() bool { return c.job(0, "j").State == JobFailed })
	j := c.job(0, "j")
	if !strings.Contains(j.Reason, "within its pending_timeout (10s)") {
		t.Fatalf("reason %q should name the pending timeout", j.Reason)
	}
	if !strings.Contains(j.Reason, "gpu memory") || !strings.Contains(j.Reason, "n1") {
		t.Fatalf("reason %q should name the gpu memory requirement and closest peer n1", j.Reason)
	}
	if took := c.now.Sub(start); took > 15*time.Second {
		t.Fatalf("took %v to fail", took)
	}
	if len(c.starts) != 0 {
		t.Fatalf("something ran: %+v", c.starts)
	}
}

func TestRetriesThenSuccess(t *testing.T) {
	c := newCluster(t, cpuNode(4), cpuNode(4), cpuNode(4))
	c.run = func(s TaskSpec, n NodeID) (int, time.Duration) {
		if s.Attempt < 3 {
			return 3, 100 * time.Millisecond
		}
		return 0, 100 * time.Millisecond
	}
	c.submit(0, "j", job("flaky", task("t", 1000)))
	c.until(30*time.Second, "job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	tr := c.job(0, "j").Tasks[0]
	if tr.Attempts != 3 || len(tr.History) != 3 {
		t.Fatalf("attempts %d history %d, want 3", tr.Attempts, len(tr.History))
	}
	if tr.History[0].Node == tr.History[1].Node {
		t.Fatalf("retry went to the same node %s although others were free", tr.History[0].Node)
	}
}

func TestAlwaysFailing(t *testing.T) {
	c := newCluster(t, cpuNode(4), cpuNode(4))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 7, 50 * time.Millisecond }
	c.submit(0, "j", job("bad", task("t", 1000)))
	c.until(60*time.Second, "job to fail", func() bool { return c.job(0, "j").State == JobFailed })
	j := c.job(0, "j")
	if j.Tasks[0].Attempts != 4 || j.Tasks[0].ExitCode != 7 || !strings.Contains(j.Reason, "exit code 7") {
		t.Fatalf("got attempts %d exit %d reason %q", j.Tasks[0].Attempts, j.Tasks[0].ExitCode, j.Reason)
	}
}

func TestDAGOrder(t *testing.T) {
	c := newCluster(t, cpuNode(4), cpuNode(4))
	c.submit(1, "j", job("dag", task("a", 1000), task("b", 1000, "a"), task("c", 1000, "a"), task("d", 1000, "b", "c")))
	c.until(30*time.Second, "job to succeed", func() bool { return c.job(1, "j").State == JobSucceeded })
	at := map[string]startRec{}
	for _, s := range c.starts {
		at[s.key.Task] = s
	}
	for _, e := range [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}} {
		if at[e[1]].at.Before(at[e[0]].end) {
			t.Fatalf("%s started at %v before %s ended at %v", e[1], at[e[1]].at, e[0], at[e[0]].end)
		}
	}
}

func TestPreemption(t *testing.T) {
	c := newCluster(t, cpuNode(2), cpuNode(2))
	c.run = func(s TaskSpec, n NodeID) (int, time.Duration) {
		if s.Priority == 1 {
			return 0, 20 * time.Second
		}
		return 0, time.Second
	}
	low := job("low", task("l0", 1000), task("l1", 1000), task("l2", 1000), task("l3", 1000))
	low.Priority = 1
	c.submit(0, "low", low)
	c.until(5*time.Second, "low tasks to run", func() bool {
		n := 0
		for _, tr := range c.job(0, "low").Tasks {
			if tr.State == TaskRunning {
				n++
			}
		}
		return n == 4
	})
	high := job("high", task("h", 1000))
	high.Priority = 9
	c.submit(1, "high", high)
	start := c.now
	c.until(5*time.Second, "high task to start", func() bool {
		return c.job(1, "high").Tasks[0].State != TaskPending && c.job(1, "high").Tasks[0].State != TaskAwarded
	})
	t.Logf("high-priority task started %v after submit", c.now.Sub(start))
	c.until(120*time.Second, "both jobs to succeed", func() bool {
		return c.job(1, "high").State == JobSucceeded && c.job(0, "low").State == JobSucceeded
	})
	pre := 0
	for _, tr := range c.job(0, "low").Tasks {
		for _, h := range tr.History {
			if h.State == TaskPreempted {
				pre++
			}
		}
	}
	if pre == 0 {
		t.Fatal("no low task was preempted")
	}
}

// TestGPUCandidatesTightestFirst: among peers with room now, a GPU request
// invites those its GPUs would leave least idle first (best fit over the
// view), so whole GPUs stay whole for the requests that need them; a
// request without GPUs keeps the random order.
func TestGPUCandidatesTightestFirst(t *testing.T) {
	m, err := New(Config{Self: "self", Capacity: cpuNode(0)})
	if err != nil {
		t.Fatal(err)
	}
	withFree := func(id NodeID, busy int) Peer {
		capv := gpuNode(8, 8, 80<<30, "A100")
		free := capv.Clone()
		for i := 0; i < busy; i++ {
			free.GPUs[i].Free = 0
		}
		return Peer{ID: id, Capacity: capv, Free: free}
	}
	for _, p := range []Peer{withFree("a-idle", 0), withFree("b-six-busy", 6), withFree("c-seven-busy", 7), withFree("d-full", 8)} {
		m.Advert(t0, p)
	}
	for _, tc := range []struct {
		req  resource.Request
		want []NodeID
	}{
		{resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 1}}, []NodeID{"c-seven-busy", "b-six-busy", "a-idle"}},
		{resource.Request{CPU: 1000, GPU: resource.GPURequest{Share: 500}}, []NodeID{"c-seven-busy", "b-six-busy", "a-idle"}},
		{resource.Request{CPU: 1000, GPU: resource.GPURequest{Count: 2}}, []NodeID{"b-six-busy", "a-idle"}},
	} {
		var got []NodeID
		for _, c := range m.auc.candidates(TaskOffer{Request: tc.req}, nil) {
			got = append(got, c.id)
		}
		if len(got) < len(tc.want) || !slices.Equal(got[:len(tc.want)], tc.want) {
			t.Errorf("%+v: candidates %v, want %v first", tc.req.GPU, got, tc.want)
		}
	}
}

// TestStepDropsForgedSender: a message whose sender field names another
// node than the one that delivered it changes nothing; the market only
// counts the refusal and notes the drop in its events.
func TestStepDropsForgedSender(t *testing.T) {
	k := TaskKey{Job: "j", Task: "t"}
	id := AuctionID{Key: k, Epoch: 1}
	for _, msg := range []Msg{
		CFP{Auction: id, Manager: "n1", Task: TaskOffer{Key: k, Request: resource.Request{CPU: 1}}},
		Bid{Auction: id, Bidder: "n1"}, NoBid{Auction: id, Bidder: "n1"},
		Award{Auction: id, Manager: "n1", Task: TaskSpec{TaskOffer: TaskOffer{Key: k}, Epoch: 1}, Last: true},
		AwardReply{Auction: id, Bidder: "n1", Accept: true},
		TaskStatus{Key: k, Epoch: 1, Node: "n1", State: TaskSucceeded},
		Hold{Auction: id, Manager: "n1", Task: TaskSpec{TaskOffer: TaskOffer{Key: k}}},
		HoldReply{Auction: id, Bidder: "n1", OK: true},
		Reserve{Auction: id, Manager: "n1", Until: t0.Add(time.Hour)},
		StealRequest{Thief: "n1", Room: resource.Request{CPU: 4000}, Max: 4},
		Transfer{Key: k, Epoch: 1, From: "n1", To: "n2"},
	} {
		m, err := New(Config{Self: "n0", Capacity: cpuNode(4)})
		if err != nil {
			t.Fatal(err)
		}
		m.Step(t0, "n9", msg)
		effs := m.Ready()
		if len(effs) != 2 {
			t.Fatalf("%s from a forger: effects %+v", Kind(msg), effs)
		}
		if r, ok := effs[0].(Refused); !ok || r.Reason != RefuseSender || r.From != "n9" {
			t.Fatalf("%s from a forger: first effect %+v, want a refusal counted", Kind(msg), effs[0])
		}
		if ev, ok := effs[1].(Event); !ok || !strings.Contains(ev.Text, "claims to come from n1") {
			t.Fatalf("%s from a forger: effect %+v", Kind(msg), effs[1])
		}
	}
}
