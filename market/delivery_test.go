package market

import (
	"slices"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/predict"
)

// TestLateSuccess: an executor cut off from its manager finishes its
// replica while the manager, its lease lapsed, places the replica again;
// when the first run's success arrives after all, the manager takes it —
// the replica succeeds at the first epoch, once — and cancels the run it
// placed since, instead of letting it run to a second success.
func TestLateSuccess(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(4))
	c.run = func(s TaskSpec, _ NodeID) (int, time.Duration) {
		if s.Attempt == 1 {
			return 0, 10 * time.Second
		}
		return 0, 30 * time.Second
	}
	c.submit(0, "j", job("late", task("t", 1000)))
	c.until(5*time.Second, "the replica to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	first := c.job(0, "j").Tasks[0]
	cutOff := true
	c.drop = func(d delivery) bool {
		return cutOff && (d.from == first.Node || d.to == first.Node) && (d.from == "n0" || d.to == "n0")
	}
	c.until(20*time.Second, "the replica placed again", func() bool {
		t := c.job(0, "j").Tasks[0]
		return t.State == TaskRunning && t.Node != first.Node
	})
	second := c.job(0, "j").Tasks[0]
	c.until(15*time.Second, "the first run to end", func() bool { return len(c.running[first.Node]) == 0 })
	cancels := c.sent["cancel"]
	cutOff = false
	c.until(20*time.Second, "the job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	got := c.job(0, "j").Tasks[0]
	if got.Epoch != first.Epoch || got.Node != first.Node {
		t.Fatalf("replica succeeded at epoch %d on %s, want the first run's (epoch %d on %s)", got.Epoch, got.Node, first.Epoch, first.Node)
	}
	if c.sent["cancel"] <= cancels {
		t.Fatalf("the run placed since (epoch %d on %s) was not cancelled", second.Epoch, second.Node)
	}
	c.until(time.Second, "the second run to stop", func() bool { _, still := c.running[second.Node][got.Key]; return !still })
	succeededOnce(t, c.job(0, "j"))
}

// TestReportAgainAfterRestart: an executor that went down right after
// its task ended — its final report lost with it — reports the exit
// again after its restart (TaskExit with the manager), and the manager
// applies it: the replica succeeds at its first attempt.
func TestReportAgainAfterRestart(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 2 * time.Second }
	lost := func(d delivery) bool {
		st, ok := d.msg.(TaskStatus)
		return ok && d.from == "n1" && st.State.Terminal()
	}
	c.drop = lost
	c.submit(0, "j", job("again", task("t", 1000)))
	c.until(5*time.Second, "the replica to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	tr := c.job(0, "j").Tasks[0]
	c.until(5*time.Second, "the run to end", func() bool { return len(c.running["n1"]) == 0 })
	if c.job(0, "j").Tasks[0].State.Terminal() {
		t.Fatal("the final report arrived though it was dropped")
	}
	c.until(time.Second, "the report to be lost", func() bool { return !slices.ContainsFunc(c.queue, lost) })
	// n1 restarts at once with the exit its executor recorded.
	m, err := New(c.nodes[1].Config())
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[1] = m
	c.drop = nil
	m.Reclaim(c.now, nil, []NodeID{"n0"}, TaskExit{Key: tr.Key, Epoch: tr.Epoch, Attempt: 1, ExitCode: 0, Reason: "exit status 0", Time: c.now.Add(-time.Second), Manager: "n0"})
	c.until(5*time.Second, "the job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	if got := c.job(0, "j").Tasks[0]; got.Epoch != tr.Epoch || got.Attempts != 1 {
		t.Fatalf("replica succeeded at epoch %d after %d attempts, want epoch %d, 1 attempt", got.Epoch, got.Attempts, tr.Epoch)
	}
	succeededOnce(t, c.job(0, "j"))
}

// awardedJob runs job j of one task running for d, placed by n0 on n1,
// and returns once it runs, with the award n1 accepted.
func awardedJob(t *testing.T, d time.Duration) (*cluster, Award) {
	c := newCluster(t, cpuNode(0), cpuNode(4))
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, d }
	var award *Award
	c.drop = func(d delivery) bool {
		if a, ok := d.msg.(Award); ok && award == nil {
			award = &a
		}
		return false
	}
	c.submit(0, "j", job("twice", task("t", 1000)))
	c.until(5*time.Second, "the replica to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	if award == nil {
		t.Fatal("no award seen")
	}
	return c, *award
}

// TestAwardDeliveredTwice: a repeat of an award the executor accepted
// (the network duplicated it) is accepted again, not refused as unbid —
// a refusal could overtake the acceptance and make the manager award the
// same epoch to another bidder.
func TestAwardDeliveredTwice(t *testing.T) {
	c, award := awardedJob(t, 10*time.Second)
	ex := c.nodes[1]
	ex.Step(c.now, "n0", award)
	var replies []AwardReply
	for _, e := range ex.Ready() {
		if s, ok := e.(Send); ok {
			if r, ok := s.Msg.(AwardReply); ok {
				replies = append(replies, r)
			}
		}
	}
	if len(replies) != 1 || !replies[0].Accept {
		t.Fatalf("answers to the repeated award: %+v, want one acceptance", replies)
	}
}

// TestAwardRepeatedAfterRehome: the repeat of an award arrives after the
// job's tasks re-homed to another manager and that manager stopped the
// attempt. It is still a repeat — answered, never started again (the
// fault campaign's seed 5546, where the repeat matched no award because
// the report now went elsewhere, and the stopped attempt ran twice).
func TestAwardRepeatedAfterRehome(t *testing.T) {
	c, award := awardedJob(t, time.Minute)
	ex := c.nodes[1]
	key, epoch := award.Task.Key, award.Task.Epoch
	ex.rehomeAt(c.now, "j", "n9")
	ex.Ready()
	ex.Step(c.now, "n9", CancelTask{Key: key, Epoch: epoch, Reason: "stale epoch"})
	stopped := false
	for _, e := range ex.Ready() {
		if s, ok := e.(StopTask); ok && s.Key == key {
			stopped = true
		}
	}
	if !stopped {
		t.Fatal("the new manager's cancel did not stop the attempt")
	}
	ex.TaskExited(c.now, key, epoch, -1, "stopped", nil)
	ex.Ready()
	ex.Step(c.now, "n0", award)
	var replies []AwardReply
	for _, e := range ex.Ready() {
		switch e := e.(type) {
		case StartTask:
			t.Fatalf("the repeated award started %s again", e.Task.Key)
		case Send:
			if r, ok := e.Msg.(AwardReply); ok {
				replies = append(replies, r)
			}
		}
	}
	if len(replies) != 1 || !replies[0].Accept {
		t.Fatalf("answers to the repeated award: %+v, want one acceptance", replies)
	}
}

// TestRepeatedCFPKeepsBidSpent: a bid an award spent (accepted or
// declined) stays spent when the call for bids arrives again, so the
// repeat of a declined award is refused too (the fault campaign's seed
// 16188: the repeated call revived the bid, the repeated award was
// accepted, and the epoch the manager had given the next bidder started
// on two nodes).
func TestRepeatedCFPKeepsBidSpent(t *testing.T) {
	c := newContractor(cpuNode(4), predict.RuntimeConfig{})
	now := time.Unix(1000, 0)
	id := AuctionID{Key: TaskKey{Job: "j", Task: "t"}, Epoch: 1}
	c.madeBid(id, now)
	if !c.bidFor(id, now, true) {
		t.Fatal("the award found no bid")
	}
	c.madeBid(id, now.Add(time.Second)) // the call for bids again
	if c.bidFor(id, now.Add(time.Second), true) {
		t.Fatal("the repeated award found the bid again")
	}
	other := AuctionID{Key: TaskKey{Job: "j", Task: "t"}, Epoch: 2}
	c.madeBid(other, now)
	if !c.bidFor(other, now, false) || !c.bidFor(other, now, true) {
		t.Fatal("a hold must not spend the bid; the award then must find it")
	}
}
