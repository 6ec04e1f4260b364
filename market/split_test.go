package market

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// TestOutranks: the two managers of a split job decide alike, whoever
// compares: exactly one of outranks(a, b) and outranks(b, a) holds.
func TestOutranks(t *testing.T) {
	r := func(s JobState, ok, run int) ClaimRank { return ClaimRank{State: s, Succeeded: ok, Running: run} }
	tests := []struct {
		name string
		a, b ClaimRank
		want bool // a (on n1) outranks b (on n2)
	}{
		{"succeeded beats failed", r(JobSucceeded, 1, 0), r(JobFailed, 0, 0), true},
		{"running beats failed", r(JobRunning, 0, 1), r(JobFailed, 3, 0), true},
		{"cancelled beats running", r(JobCancelled, 0, 0), r(JobRunning, 2, 1), true},
		{"succeeded beats cancelled", r(JobCancelled, 0, 0), r(JobSucceeded, 1, 0), false},
		{"pending loses to running", r(JobPending, 0, 0), r(JobRunning, 0, 1), false},
		{"more succeeded", r(JobRunning, 3, 0), r(JobRunning, 2, 5), true},
		{"more running", r(JobRunning, 2, 1), r(JobRunning, 2, 2), false},
		{"tie: smaller node ID", r(JobRunning, 2, 2), r(JobRunning, 2, 2), true},
		{"unfinished: the adopter that got further", r(JobRunning, 0, 0), ClaimRank{State: JobRunning, Succeeded: 5, Running: 5, TakenFrom: "n1"}, false},
		{"unfinished: the adopter over a pending original", ClaimRank{State: JobRunning, Succeeded: 9, Running: 1, TakenFrom: "n2"}, r(JobPending, 0, 0), true},
		{"the adopter rescued a job the original failed", ClaimRank{State: JobSucceeded, TakenFrom: "n2"}, r(JobFailed, 0, 0), true},
		{"the original's success over the adopter's failure", r(JobSucceeded, 1, 0), ClaimRank{State: JobFailed, TakenFrom: "n1"}, true},
		{"a finished adopter over the original still running", r(JobRunning, 0, 2), ClaimRank{State: JobSucceeded, Succeeded: 3, TakenFrom: "n1"}, false},
		{"both failed: the original", ClaimRank{State: JobFailed, TakenFrom: "n2"}, r(JobFailed, 0, 0), false},
		{"the same end: the original", r(JobSucceeded, 3, 0), ClaimRank{State: JobSucceeded, Succeeded: 3, TakenFrom: "n1"}, true},
		{"the same end: the original even with a larger ID", ClaimRank{State: JobSucceeded, Succeeded: 3, TakenFrom: "n2"}, r(JobSucceeded, 3, 0), false},
		{"two adopters: the counts, then the smaller ID", ClaimRank{State: JobRunning, TakenFrom: "n3"}, ClaimRank{State: JobRunning, TakenFrom: "n1"}, true},
	}
	// Transitive: over every triple of these ranks on three nodes, no
	// cycle (each would give the job up to the next, and it would be
	// lost).
	var ranks []ClaimRank
	for _, tc := range tests {
		ranks = append(ranks, tc.a, tc.b)
	}
	nodes := []NodeID{"n1", "n2", "n3"}
	for i, a := range ranks {
		for j, b := range ranks {
			for k, c := range ranks {
				if outranks(a, nodes[0], b, nodes[1]) && outranks(b, nodes[1], c, nodes[2]) && outranks(c, nodes[2], a, nodes[0]) {
					t.Fatalf("ranks %d > %d > %d > %d: a cycle", i, j, k, i)
				}
			}
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := outranks(tc.a, "n1", tc.b, "n2"); got != tc.want {
				t.Fatalf("outranks(a, b) = %v, want %v", got, tc.want)
			}
			if back := outranks(tc.b, "n2", tc.a, "n1"); back == tc.want {
				t.Fatalf("outranks(b, a) = %v as well: the two managers would not agree", back)
			}
		})
	}
}

// splitCluster cuts manager n0 off from n1 and n2 after its job started,
// and lets n2 take the job over from the copy it holds, as a copy holder
// does when the manager leaves its view.
func splitCluster(t *testing.T, caps ...int) *cluster {
	c, rec := runningJob(t, 6*time.Second, caps...)
	c.cutOff(rec)
	return c
}

// cutOff cuts manager n0 off from n1 and n2 and lets n2 take the job
// over from rec, the copy it holds.
func (c *cluster) cutOff(rec JobRecord) {
	c.cut["n0"] = true
	for i := 1; i < len(c.nodes); i++ {
		c.nodes[i].PeerGone(c.now, "n0")
	}
	c.nodes[0].PeerGone(c.now, "n1")
	c.nodes[0].PeerGone(c.now, "n2")
	c.nodes[2].adoptAt(c.now, rec)
	c.drain()
}

// runningJob starts nodes of caps CPU each, submits job j of one task
// running for d to n0, and returns once the task runs, with n0's record.
func runningJob(t *testing.T, d time.Duration, caps ...int) (*cluster, JobRecord) {
	vs := make([]resource.Vector, len(caps))
	for i, c := range caps {
		vs[i] = cpuNode(c)
	}
	c := newCluster(t, vs...)
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, d }
	js := job("split", task("t", 1000))
	js.PendingTimeout = 10 * time.Second // the side without room fails it
	c.submit(0, "j", js)
	c.until(5*time.Second, "the task to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	return c, c.job(0, "j")
}

// heal ends the cut: the views fill again.
func (c *cluster) heal() {
	c.cut = map[NodeID]bool{}
	c.adverts()
	c.drain()
}

// managers lists the nodes that manage job id.
func (c *cluster) managers(id string) []NodeID {
	var out []NodeID
	for i, m := range c.nodes {
		if _, ok := m.Job(id); ok {
			out = append(out, c.ids[i])
		}
	}
	return out
}

// TestSplitManagerKeepsOutcome: the manager ran its task on itself and it
// succeeded during the cut; the adopter, on the other side, found no node
// for it and failed the job. After the cut the adopter gives the job up
// to the manager, whose record shows the one success.
func TestSplitManagerKeepsOutcome(t *testing.T) {
	c := splitCluster(t, 4, 0, 0)
	c.until(time.Minute, "both sides to finish", func() bool {
		return c.job(0, "j").State == JobSucceeded && c.job(2, "j").State == JobFailed
	})
	c.heal()
	c.until(5*time.Second, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n0"}) {
		t.Fatalf("managers %v, want n0", got)
	}
	succeededOnce(t, c.job(0, "j"))
	if !slices.Contains(c.forgotten, "n2/j") {
		t.Fatalf("n2 did not forget the job: %v", c.forgotten)
	}
	if log := c.eventLog(); !strings.Contains(log, "n2: n0 manages this job too") || !strings.Contains(log, "n0: n2 manages this job too") {
		t.Fatalf("no event says how the split was settled:\n%s", log)
	}
}

// TestSplitAdopterKeepsOutcome: the manager is cut off alone with no room
// for its task, which ran on n1, and fails the job; n2 takes the job
// over, n1 reports to it, and the task succeeds there. After the cut the
// manager gives the job up.
func TestSplitAdopterKeepsOutcome(t *testing.T) {
	c := splitCluster(t, 0, 4, 0)
	c.nodes[1].rehomeAt(c.now, "j", "n2")
	c.drain()
	c.until(time.Minute, "both sides to finish", func() bool {
		return c.job(0, "j").State == JobFailed && c.job(2, "j").State == JobSucceeded
	})
	c.heal()
	c.until(5*time.Second, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n2"}) {
		t.Fatalf("managers %v, want n2", got)
	}
	succeededOnce(t, c.job(2, "j"))
	if len(c.starts) != 1 {
		t.Fatalf("%d runs, want 1", len(c.starts))
	}
}

// TestSplitCancelsLoserAttempts: both sides run the task (the manager on
// itself, the adopter on n1) and the heal comes while both run. The
// adopter's attempt is vouched for by n1's signed reports; the
// manager's, on itself, by nothing another node can check: the adopter's
// record is kept. The manager hands its own attempt over, the winner
// cancels it as stale (it never placed it), and the job ends with one
// success.
func TestSplitCancelsLoserAttempts(t *testing.T) {
	c := splitCluster(t, 4, 4, 0)
	c.run = func(TaskSpec, NodeID) (int, time.Duration) { return 0, 20 * time.Second }
	c.until(time.Minute, "the adopter to run the task again", func() bool {
		return c.job(2, "j").Tasks[0].State == TaskRunning
	})
	c.heal()
	c.until(5*time.Second, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n2"}) {
		t.Fatalf("managers %v, want n2 (its attempt is vouched for)", got)
	}
	c.until(10*time.Millisecond, "the loser's attempt to stop", func() bool { return len(c.running["n0"]) == 0 })
	c.until(time.Minute, "the job to succeed", func() bool { return c.job(2, "j").State == JobSucceeded })
	succeededOnce(t, c.job(2, "j"))
}

// TestSplitFirstManagersOwnSuccess: during the cut the first manager's
// task fails on itself and its retry, an attempt the adopter's copy does
// not show, succeeds there, while the adopter's attempt on n1 still
// runs. The adopter's record wins (n1 vouches for its attempt; a
// manager's own work proves nothing to another node), but the first
// manager re-homes its own final report when it yields, and the winner
// takes that success rather than run the replica again: the job ends
// with n0's success and n1's attempt is cancelled.
func TestSplitFirstManagersOwnSuccess(t *testing.T) {
	c := newCluster(t, cpuNode(4), cpuNode(4), cpuNode(0))
	n0runs := 0
	c.run = func(_ TaskSpec, n NodeID) (int, time.Duration) {
		if n != "n0" {
			return 0, time.Hour
		}
		if n0runs++; n0runs == 1 {
			return 1, 3 * time.Second
		}
		return 0, 2 * time.Second
	}
	c.submit(0, "j", job("split", task("t", 1000)))
	c.until(5*time.Second, "the task to run", func() bool { return c.job(0, "j").Tasks[0].State == TaskRunning })
	c.cutOff(c.job(0, "j"))
	c.until(time.Minute, "n0's retry to succeed and n2's attempt to run on n1", func() bool {
		return c.job(0, "j").State == JobSucceeded && c.job(2, "j").Tasks[0].State == TaskRunning && c.job(2, "j").Tasks[0].Node == "n1"
	})
	c.heal()
	c.until(5*time.Second, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n2"}) {
		t.Fatalf("managers %v, want n2", got)
	}
	c.until(time.Second, "the job to succeed", func() bool { return c.job(2, "j").State == JobSucceeded })
	if tk := c.job(2, "j").Tasks[0]; tk.Node != "n0" || tk.Epoch != 2 {
		t.Fatalf("the success kept is on %s epoch %d, want n0's retry (epoch 2)", tk.Node, tk.Epoch)
	}
	c.until(time.Second, "n1's attempt to stop", func() bool { return len(c.running["n1"]) == 0 })
}

// vouch is executor's proof, as a cluster node signs it, that replica
// key of epoch is held (or succeeded) under manager.
func vouch(executor NodeID, key TaskKey, epoch uint64, succeeded bool, manager NodeID) TaskProof {
	return TaskProof{Key: key, Epoch: epoch, Node: executor, Succeeded: succeeded,
		Sig: hashProver{executor}.Sign(ProofBytes(key, epoch, succeeded, manager))}
}

// TestForgedClaimsRefused: claims whose rank their proofs do not bear
// out — none, a proof signed by the claimer itself, one that names
// another manager, one of another job, a bad signature, or a claim to be
// the job's first manager — are refused and counted, and the manager
// keeps its job; the same claim with another node's proof is taken.
func TestForgedClaimsRefused(t *testing.T) {
	caps := make([]resource.Vector, 3)
	for i := range caps {
		caps[i] = cpuNode(1)
	}
	c := newCluster(t, caps...)
	c.submit(0, "j", job("split", task("t", 1000)))
	key := TaskKey{Job: "j", Task: "t"}
	won := ClaimRank{State: JobSucceeded, Succeeded: 1, TakenFrom: "n0"}
	bad := vouch("n2", key, 1, true, "n1")
	bad.Sig[0] ^= 1
	forged := []struct {
		name   string
		rank   ClaimRank
		proofs []TaskProof
	}{
		{"no proof", won, nil},
		{"signed by the claimer", won, []TaskProof{vouch("n1", key, 1, true, "n1")}},
		{"names another manager", won, []TaskProof{vouch("n2", key, 1, true, "n0")}},
		{"another job", won, []TaskProof{vouch("n2", TaskKey{Job: "k", Task: "t"}, 1, true, "n1")}},
		{"held, claimed succeeded", won, []TaskProof{vouch("n2", key, 1, false, "n1")}},
		{"bad signature", won, []TaskProof{bad}},
		{"first manager", ClaimRank{State: JobPending}, nil},
		{"cancelled", ClaimRank{State: JobCancelled, TakenFrom: "n0"}, nil},
	}
	for i, f := range forged {
		c.nodes[0].Step(c.now, "n1", ManagerClaim{Job: "j", From: "n1", Rank: f.rank, Proofs: f.proofs})
		c.drain()
		if c.refused[RefuseClaimProof] != i+1 {
			t.Fatalf("%s: refusals %v, want %d %s", f.name, c.refused, i+1, RefuseClaimProof)
		}
		if got := c.managers("j"); !slices.Equal(got, []NodeID{"n0"}) {
			t.Fatalf("%s: managers %v, want n0", f.name, got)
		}
	}
	if log := c.eventLog(); !strings.Contains(log, "claim to manage job j from n1 refused: it claims succeeded with 1 succeeded") {
		t.Fatalf("no event says why a claim was refused:\n%s", log)
	}
	c.nodes[0].Step(c.now, "n1", ManagerClaim{Job: "j", From: "n1", Rank: won, Proofs: []TaskProof{vouch("n2", key, 1, true, "n1")}})
	c.drain()
	if got := c.managers("j"); slices.Contains(got, "n0") {
		t.Fatalf("managers %v after a proven claim: want n0 to yield", got)
	}
}

// TestSplitClaimRefused: a claim from a node that could not have taken
// the job over (not among the peers closest to its ID) is refused, and
// the manager keeps its job.
func TestSplitClaimRefused(t *testing.T) {
	caps := make([]resource.Vector, 8)
	for i := range caps {
		caps[i] = cpuNode(1)
	}
	c := newCluster(t, caps...)
	c.submit(0, "j", job("split", task("t", 1000)))
	close := Closest("j", c.ids[1:], c.nodes[0].fo.reclaimAsk())
	var far NodeID
	for _, id := range c.ids[1:] {
		if !slices.Contains(close, id) {
			far = id
		}
	}
	key := TaskKey{Job: "j", Task: "t"}
	won := ClaimRank{State: JobSucceeded, Succeeded: 1, TakenFrom: "n0"}
	c.nodes[0].Step(c.now, far, ManagerClaim{Job: "j", From: far, Rank: won, Proofs: []TaskProof{vouch("n0", key, 1, true, far)}})
	c.drain()
	if c.refused[RefuseClaim] != 1 {
		t.Fatalf("refusals %v, want one %s", c.refused, RefuseClaim)
	}
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n0"}) {
		t.Fatalf("managers %v, want n0", got)
	}
	c.nodes[0].Step(c.now, close[0], ManagerClaim{Job: "j", From: close[0], Rank: won, Proofs: []TaskProof{vouch("n0", key, 1, true, close[0])}})
	c.drain()
	if got := c.managers("j"); len(got) != 0 {
		t.Fatalf("managers %v after a claim from %s, one of the closest: want none (n0 yields to it)", got, close[0])
	}
}

// twoAdopters lets every node in adopters take job j over from the same
// copy of n0's record while its task runs on n-runner, as copy holders
// do when their views disagree on who is closest (each missed the
// other's adverts for a while, as a loaded node may). They meet when
// their adverts reach each other again.
func twoAdopters(t *testing.T, runner int, adopters []int, caps ...int) (*cluster, JobRecord) {
	c, rec := runningJob(t, 20*time.Second, caps...)
	if rec.Tasks[0].Node != c.ids[runner] {
		t.Fatalf("the task runs on %s, want %s", rec.Tasks[0].Node, c.ids[runner])
	}
	c.cut["n0"] = true
	for i := 1; i < len(c.nodes); i++ {
		if i != runner || slices.Contains(adopters, i) { // the runner has not noticed yet
			c.nodes[i].PeerGone(c.now, "n0")
		}
	}
	for _, i := range adopters {
		for _, o := range adopters {
			if o != i {
				c.nodes[i].PeerGone(c.now, c.ids[o])
			}
		}
	}
	for _, i := range adopters {
		c.nodes[i].adoptAt(c.now, rec)
	}
	return c, rec
}

// TestSplitExecutorsManagerKeepsTheJob: two copy holders took the job
// over from one record, and the executor of its running task found n3.
// Its signed reports vouch for n3's record, none for n2's (whose copy's
// proofs name n0): when they meet, n2 gives the job up though its ID is
// smaller, the executor stays where it reports, and the task runs once.
// (Before claims carried proofs, ties went to the smaller ID and n3
// handed the executor over; a loser's executors are still told the
// winner, TestSplitLoserTellsExecutorsOfSuccesses.)
func TestSplitExecutorsManagerKeepsTheJob(t *testing.T) {
	c, _ := twoAdopters(t, 1, []int{2, 3}, 0, 4, 0, 0)
	c.nodes[1].rehomeAt(c.now, "j", "n3")
	c.winnerRunsOnce(t, 3)
	if log := c.eventLog(); !strings.Contains(log, "n1: now reporting 1 task(s) to manager n3") || strings.Contains(log, "n3: j/t/0: lease lapsed") {
		t.Fatalf("the executor did not stay with n3:\n%s", log)
	}
}

// TestSplitLoserRunsTheTask: the loser (n2) is the executor itself. It
// gives the job up to n1 and its own attempt reports to n1 from then on.
func TestSplitLoserRunsTheTask(t *testing.T) {
	c, _ := twoAdopters(t, 2, []int{1, 2}, 0, 0, 4)
	c.winnerRunsOnce(t, 1)
}

// winnerRunsOnce checks that of the two adopters only node w manages the
// job once they met (beside n0, cut off), and that the job succeeds
// there with its task run once.
func (c *cluster) winnerRunsOnce(t *testing.T, w int) {
	t.Helper()
	c.drain()
	c.until(5*time.Second, "one manager beside n0, cut off", func() bool { return len(c.managers("j")) == 2 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n0", c.ids[w]}) {
		t.Fatalf("managers %v, want n0 (cut off) and %s", got, c.ids[w])
	}
	c.until(time.Minute, "the job to succeed", func() bool { return c.job(w, "j").State == JobSucceeded })
	succeededOnce(t, c.job(w, "j"))
	if len(c.starts) != 1 {
		t.Fatalf("%d runs, want 1: %+v", len(c.starts), c.starts)
	}
}

// TestSplitHandOverNeedsTheManager: a successor named by anyone but the
// node the executor reports to is not asked, and one that does not manage
// the job does not get the executor's reports.
func TestSplitHandOverNeedsTheManager(t *testing.T) {
	c, _ := twoAdopters(t, 1, []int{2}, 0, 4, 0, 0)
	c.nodes[1].rehomeAt(c.now, "j", "n2")
	c.drain()
	c.until(3*time.Second, "the executor to find n2", func() bool {
		return strings.Contains(c.eventLog(), "n1: now reporting 1 task(s) to manager n2")
	})
	before := len(c.eventLog())
	c.nodes[1].Step(c.now, "n3", ManagerAnswer{Job: "j", From: "n3", Successor: "n3"})
	c.nodes[1].Step(c.now, "n2", ManagerAnswer{Job: "j", From: "n2", Successor: "n3"}) // n3 does not manage it
	for end := c.now.Add(10 * time.Second); c.now.Before(end); {
		c.step()
	}
	if log := c.eventLog()[before:]; strings.Contains(log, "now reporting") {
		t.Fatalf("the executor moved:\n%s", log)
	}
	if c.job(2, "j").Tasks[0].State != TaskRunning {
		t.Fatalf("task %s on n2, want running", c.job(2, "j").Tasks[0].State)
	}
}

// TestSplitLoserTellsExecutorsOfSuccesses: a manager that gives its job
// up tells the executors of the replicas that succeeded under it, not
// only of those still running, which manager won. They still hold their
// final reports and re-home them there, so the winner learns of
// successes its side of the cut never saw instead of running them again.
func TestSplitLoserTellsExecutorsOfSuccesses(t *testing.T) {
	caps := make([]resource.Vector, 8)
	for i := range caps {
		caps[i] = cpuNode(1)
	}
	c := newCluster(t, caps...)
	c.run = func(s TaskSpec, _ NodeID) (int, time.Duration) {
		if s.Key.Task == "a" {
			return 0, time.Second
		}
		return 0, time.Hour
	}
	var told []delivery
	c.drop = func(d delivery) bool {
		if a, ok := d.msg.(ManagerAnswer); ok && d.from == "n0" && a.Successor != "" {
			told = append(told, d)
		}
		return false
	}
	c.submit(0, "j", job("split", task("a", 1000), task("b", 1000)))
	c.until(time.Minute, "a to succeed and b to run", func() bool {
		j := c.job(0, "j")
		return j.Tasks[0].State == TaskSucceeded && j.Tasks[1].State == TaskRunning
	})
	j := c.job(0, "j")
	done, running := j.Tasks[0].Node, j.Tasks[1].Node
	winner := Closest("j", c.ids[1:], c.nodes[0].fo.reclaimAsk())[0]
	var proofs []TaskProof
	for _, k := range []TaskKey{{Job: "j", Task: "a"}, {Job: "j", Task: "b"}} {
		proofs = append(proofs, vouch("n0", k, 1, true, winner))
	}
	c.nodes[0].Step(c.now, winner, ManagerClaim{Job: "j", From: winner, Rank: ClaimRank{State: JobSucceeded, Succeeded: 2, TakenFrom: "n0"}, Proofs: proofs})
	for end := c.now.Add(time.Second); c.now.Before(end); {
		c.step()
	}
	if got := c.managers("j"); slices.Contains(got, "n0") {
		t.Fatalf("n0 kept the job (managers %v)", got)
	}
	to := map[NodeID]bool{}
	for _, d := range told {
		to[d.to] = true
	}
	for _, n := range []NodeID{done, running} {
		if n != "n0" && n != winner && !to[n] {
			t.Errorf("%s (of a replica that %s) was not told the job went to %s; told: %v", n,
				map[bool]string{true: "succeeded", false: "runs"}[n == done], winner, told)
		}
	}
}

// TestReclaimIntroducesTwoAdopters: two nodes took the job over from the
// same copy while its manager was away (the two sides of a cut). When
// the manager comes back, both answer that they manage it; it restores
// nothing and tells each of the other, so the two meet and one manager
// is left (the fault campaign's seed 17908, where the adopters' claims
// to the first manager came before it knew of them and found no one).
func TestReclaimIntroducesTwoAdopters(t *testing.T) {
	c, rec := runningJob(t, time.Hour, 0, 4, 0)
	// Both adopters took it over, each not knowing of the other.
	c.nodes[1].adoptAt(c.now, rec)
	c.nodes[2].adoptAt(c.now, rec)
	c.drain()
	if got := c.managers("j"); len(got) != 3 {
		t.Fatalf("managers %v, want n0, n1 and n2", got)
	}
	m, err := New(c.nodes[0].Config())
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[0] = m
	m.Reclaim(c.now, []JobRecord{rec}, []NodeID{"n1", "n2"})
	c.adverts()
	c.until(30*time.Second, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if log := c.eventLog(); !strings.Contains(log, "n0: manager restarted: n1 and n2 took the job over meanwhile") &&
		!strings.Contains(log, "n0: manager restarted: n2 and n1 took the job over meanwhile") {
		t.Fatalf("the restarted manager did not see both adopters:\n%s", log)
	}
}

// TestRestartedAdopterClaimsFromOrigin: the first manager and the node
// that took its job over during a cut both restart while still cut off,
// each restoring its finished record; the cut heals before their views
// settle, so neither takes the other for a peer back from a cut. Once
// settled, the adopter claims the job from its first manager (the
// record's origin), and one manager is left (the fault campaign's seed
// 17908).
func TestRestartedAdopterClaimsFromOrigin(t *testing.T) {
	c := splitCluster(t, 4, 0, 0)
	c.until(time.Minute, "both sides to finish", func() bool {
		return c.job(0, "j").State == JobSucceeded && c.job(2, "j").State == JobFailed
	})
	for _, i := range []int{0, 2} {
		rec := c.job(i, "j")
		m, err := New(c.nodes[i].Config())
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[i] = m
		m.Reclaim(c.now, []JobRecord{rec}, []NodeID{"n0", "n1", "n2"})
	}
	c.heal()
	c.until(time.Minute, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n0"}) {
		t.Fatalf("managers %v, want n0", got)
	}
}

// TestSplitListsOtherSidesRun: the adopter is the side cut off (a node
// whose process stood still looks the same to its peers): it takes the
// job over and runs the task again on itself, while the manager's
// attempt runs on n1, which vouches for it. After the heal the manager's
// record is kept; the adopter's attempt reports to it, is cancelled as
// stale, and is listed in the replica's history before the record's own
// attempt — every run the manager heard of is in the record, and once.
func TestSplitListsOtherSidesRun(t *testing.T) {
	c, rec := runningJob(t, 20*time.Second, 0, 4, 4)
	if got := c.job(0, "j").Tasks[0].Node; got != "n1" {
		t.Fatalf("the task runs on %s, want n1", got)
	}
	c.cut["n2"] = true
	c.nodes[2].PeerGone(c.now, "n0")
	c.nodes[2].PeerGone(c.now, "n1")
	c.nodes[0].PeerGone(c.now, "n2")
	c.nodes[1].PeerGone(c.now, "n2")
	c.nodes[2].adoptAt(c.now, rec)
	c.drain()
	c.until(time.Minute, "the adopter to run the task on itself", func() bool { return len(c.running["n2"]) == 1 })
	c.heal()
	c.until(5*time.Second, "one manager", func() bool { return len(c.managers("j")) == 1 })
	if got := c.managers("j"); !slices.Equal(got, []NodeID{"n0"}) {
		t.Fatalf("managers %v, want n0 (n1 vouches for its attempt)", got)
	}
	c.until(time.Minute, "the adopter's attempt to stop", func() bool { return len(c.running["n2"]) == 0 })
	c.until(time.Minute, "the job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
	j := c.job(0, "j")
	succeededOnce(t, j)
	h := j.Tasks[0].History
	other := 0
	for _, a := range h {
		if a.Node == "n2" {
			other++
			if a.State != TaskCancelled || !strings.HasPrefix(a.Reason, otherSidesRun) {
				t.Errorf("the adopter's attempt is listed as %+v", a)
			}
		}
	}
	if other != 1 {
		t.Fatalf("the history lists the adopter's run %d times, want once: %+v", other, h)
	}
	if last := h[len(h)-1]; last.Node != "n1" || last.State != TaskSucceeded {
		t.Fatalf("the last attempt is %+v, want n1's success", last)
	}
}
