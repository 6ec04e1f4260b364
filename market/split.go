package market

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// Two managers after a cut. A node that takes a job over from a copy
// (failover.go) cannot tell a manager that died from one cut off: after
// a cut heals, the job may be managed on both sides — by its manager,
// which kept it (or restored it after a restart while cut off, asking
// only the peers it could reach), and by the copy holder that adopted
// it. Each side may have run, finished or failed the job meanwhile.
//
// When they meet again one of them gives the job up. Each sends the
// other a ManagerClaim with its record's rank and the executors' signed
// proofs that bear it out (proofs.go); both rank the two records the
// same way (outranks) and the lower one yields: it hands the
// attempts that report to it over to the winner, tells the holders of
// its copies to drop them, and forgets the job, keeping its event log.
// The winner copies its record again to its replica set. It is the
// winner that knows which attempts it placed or inherited, so it judges
// them: an attempt its record shows runs on and reports to it, any other
// it cancels as stale when its executor reports. The loser does not
// cancel them itself: both may have adopted one record, and an attempt
// running for both would be lost and run again. Its own attempts report
// to the winner at once; the other executors get a ManagerAnswer naming
// the winner as its successor, ask it, and report to it once it says it
// manages the job. A task that ran on both sides ran twice; the record
// that remains shows one outcome for it, and lists the other side's
// attempts its executors report to the winner (noteOtherSidesRun).
//
// They meet (claims go out) when
//   - a manager a job was taken over from comes back into the view
//     (takenFrom, in memory: an adopter that restarts forgets it), or
//     the job's first manager does (the record's Origin);
//   - a peer that left the view comes back and is among the peers
//     closest to the ID of a job managed here: it may have held a copy
//     and adopted the job;
//   - a node is pushed a copy of a job it manages itself.
//
// A claim is taken only from such a peer: the job's original manager
// (for an adopter), or one of the peers closest to the job ID, which
// could have held a copy. A claim from any other node is refused: it
// could otherwise make a manager drop any job.

// ClaimRank is how far a manager's record of a job got, as a
// ManagerClaim carries it.
type ClaimRank struct {
	State     JobState `json:"state"`
	Succeeded int      `json:"succeeded"`
	Running   int      `json:"running"`
	// TakenFrom is the manager this node took the job over from; empty
	// for the job's first manager (or an adopter that restarted since).
	TakenFrom NodeID `json:"taken_from,omitempty"`
}

// rankOf is j's rank as this node manages it.
func (sp *splits) rankOf(j *JobRecord) ClaimRank {
	r := ClaimRank{State: j.State, TakenFrom: sp.takenFrom[j.ID]}
	if r.TakenFrom == "" && j.Origin != sp.cfg.Self {
		// Taken over before a restart, which forgot from whom: from the
		// job's first manager, or by way of it.
		r.TakenFrom = j.Origin
	}
	for i := range j.Tasks {
		switch j.Tasks[i].State {
		case TaskSucceeded:
			r.Succeeded++
		case TaskAwarded, TaskRunning:
			r.Running++
		}
	}
	return r
}

// disputeRank is what this node claims job j with against peer p: its
// record's rank as its proofs bear it out (provenRank), and those
// proofs, as they were when it first claimed the job from p or answered
// p's claim, the same in every claim and reply to p after. Each side of
// a dispute compares the rank it sent with the one it got, so both
// compare the same two ranks and exactly one yields. Ranked afresh each
// time, a replica's end between a node's claim and its answer to the
// other's made each side compare different ranks, and both gave the job
// up (the fault campaign: the job lost).
func (sp *splits) disputeRank(j *JobRecord, p NodeID) dispute {
	k := claimKey{j.ID, p}
	if d, ok := sp.disputes[k]; ok {
		return d
	}
	if len(sp.disputes) >= maxGone {
		clear(sp.disputes)
	}
	proofs := sp.ownProofs(j)
	d := dispute{rank: sp.provenRank(j, sp.cfg.Self, sp.rankOf(j), proofs), proofs: proofs}
	sp.disputes[k] = d
	return d
}

// forgetDisputes drops the ranks of job's disputes.
func (sp *splits) forgetDisputes(job string) {
	for k := range sp.disputes {
		if k.job == job {
			delete(sp.disputes, k)
		}
	}
}

// stateOrder ranks job states for outranks: an outcome a task really had
// beats a job that still runs, which beats one failed (on one side of a
// cut a job pinned to the other fails for want of a node). A job its
// owner cancelled stays cancelled unless it succeeded anyway.
func stateOrder(s JobState) int {
	switch s {
	case JobSucceeded:
		return 4
	case JobCancelled:
		return 3
	case JobRunning:
		return 2
	case JobPending:
		return 1
	}
	return 0
}

// outranks reports whether a's record of a job, managed by node an,
// ranks above b's, managed by bn: by job state (stateOrder), replicas
// succeeded, replicas running — the record that got further, so that the
// fewest replicas run again — then the job's first manager (TakenFrom
// empty) over a node that took it over, then the smaller node ID. It is
// a total order of the records, the same at every node: three managers
// of one job rank alike pairwise (an order by who took the job from
// whom was not transitive — the original over its adopter, the adopter's
// adopter over it, and a further record over the original — and the
// fault campaign found three managers each giving the job up to
// another, the job lost). outranks(a, an, b, bn) == !outranks(b, bn, a,
// an) whenever an != bn.
func outranks(a ClaimRank, an NodeID, b ClaimRank, bn NodeID) bool {
	if x, y := stateOrder(a.State), stateOrder(b.State); x != y {
		return x > y
	}
	if a.Succeeded != b.Succeeded {
		return a.Succeeded > b.Succeeded
	}
	if a.Running != b.Running {
		return a.Running > b.Running
	}
	if ao, bo := a.TakenFrom == "", b.TakenFrom == ""; ao != bo {
		return ao
	}
	return an < bn
}

// ManagerClaim says From manages Job, with its record's rank: sent to a
// node that may manage the job too (see above). Reply marks the answer
// to a claim, which is not answered again.
type ManagerClaim struct {
	Job   string    `json:"job"`
	From  NodeID    `json:"from"`
	Rank  ClaimRank `json:"rank"`
	Reply bool      `json:"reply,omitempty"`
	// Proofs bear the rank out: executors' signed reports of replicas
	// held or succeeded under From (proofs.go).
	Proofs []TaskProof `json:"proofs,omitempty"`
}

func (ManagerClaim) msgKind() string  { return "manager_claim" }
func (m ManagerClaim) Sender() NodeID { return m.From }

// RefuseClaim is the refusal of a ManagerClaim from a node that could not
// have taken the job over; RefuseClaimProof of one whose rank its proofs
// do not bear out.
const (
	RefuseClaim      = "manager_claim"
	RefuseClaimProof = "manager_claim_proof"
)

// claimMsg is this node's claim to job j sent to p.
func (sp *splits) claimMsg(j *JobRecord, p NodeID, reply bool) ManagerClaim {
	d := sp.disputeRank(j, p)
	return ManagerClaim{Job: j.ID, From: sp.cfg.Self, Rank: d.rank, Reply: reply, Proofs: d.proofs}
}

// claim sends p this node's claim to job. A claim that is not a reply
// goes again every QueryTimeout, claimTries times in all, until p answers
// or leaves the view: the first messages to a peer just back from a cut
// are the likeliest lost.
func (sp *splits) claim(p NodeID, j *JobRecord, reply bool) {
	sp.send(p, sp.claimMsg(j, p, reply))
	if reply {
		return
	}
	if sp.claims == nil {
		sp.claims = map[claimKey]*openClaim{}
	}
	k := claimKey{j.ID, p}
	if c := sp.claims[k]; c != nil {
		c.next = sp.now.Add(sp.cfg.QueryTimeout)
		return
	}
	sp.claims[k] = &openClaim{next: sp.now.Add(sp.cfg.QueryTimeout), tries: 1}
}

// claimKey names a claim sent: the job and the peer it went to.
type claimKey struct {
	job string
	to  NodeID
}

// openClaim is a claim awaiting its answer.
type openClaim struct {
	next  time.Time
	tries int
}

// claimTries bounds how often an unanswered claim goes.
const claimTries = 5

// claimsDue sends again the claims due, and drops those answered by a
// peer's leaving or by the job's.
func (sp *splits) claimsDue() {
	if len(sp.claims) == 0 {
		return
	}
	keys := make([]claimKey, 0, len(sp.claims))
	for k := range sp.claims {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].job != keys[b].job {
			return keys[a].job < keys[b].job
		}
		return keys[a].to < keys[b].to
	})
	for _, k := range keys {
		c := sp.claims[k]
		j := sp.jobs[k.job]
		if j == nil || !sp.live(k.to) || c.tries >= claimTries {
			delete(sp.claims, k)
			continue
		}
		if sp.now.Before(c.next) {
			continue
		}
		c.tries++
		c.next = sp.now.Add(sp.cfg.QueryTimeout)
		sp.send(k.to, sp.claimMsg(j, k.to, false))
	}
}

// nextClaim is when claimsDue next has work; ok is false for never.
func (sp *splits) nextClaim() (at time.Time, ok bool) {
	for _, c := range sp.claims {
		if !ok || c.next.Before(at) {
			at, ok = c.next, true
		}
	}
	return at, ok
}

// peerBack sends claims, when peer p comes into the view, for the jobs
// managed here that p may manage too.
func (sp *splits) peerBack(p NodeID) {
	_, wasGone := sp.gone[p]
	delete(sp.gone, p)
	if !sp.fo.settled() {
		return
	}
	// A peer first seen once the view had settled may be one a cut kept
	// away since this node started (it restarted while cut off).
	wasGone = wasGone || (!sp.fo.settledAt.IsZero() && sp.fo.settledAt.Before(sp.now))
	ids := make([]string, 0)
	for job, from := range sp.takenFrom {
		if from == p && sp.jobs[job] != nil {
			ids = append(ids, job)
		}
	}
	if wasGone {
		h := sha256.Sum256([]byte(p))
		for id, j := range sp.jobs {
			// The job's first manager too: an adopter that restarted
			// forgot it took the job from it (takenFrom), and the first
			// manager, restoring a finished job, asks no one.
			if sp.takenFrom[id] != p && (j.Origin == p || sp.amongClosest(id, h, sp.fo.reclaimAsk())) {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		sp.claim(p, sp.jobs[id], false)
	}
}

// claimOrigins claims, once a restarted node's view has settled, each job
// it took over from another node to that job's first manager if it is in
// the view. A peer that came into the view before the settle is taken
// for one that was there all along (peerBack), and this node forgot whom
// it took its jobs from; if a cut that kept the first manager away
// healed during the settle, the two went on both managing the job (the
// fault campaign's seed 17908).
func (sp *splits) claimOrigins() {
	for _, id := range slices.Sorted(maps.Keys(sp.jobs)) {
		if j := sp.jobs[id]; j.Origin != "" && j.Origin != sp.cfg.Self && sp.live(j.Origin) {
			sp.claim(j.Origin, j, false)
		}
	}
}

// maxGone bounds the peers remembered as gone; past it the memory starts
// afresh (a peer forgotten there is checked when it pushes a copy).
const maxGone = 4096

// peerLeft remembers that p left the view, for peerBack.
func (sp *splits) peerLeft(p NodeID) {
	if len(sp.gone) >= maxGone {
		clear(sp.gone)
	}
	sp.gone[p] = struct{}{}
}

// amongClosest reports whether a peer with ID digest h is among the r
// peers of the view closest to key (this node left out), as closestPeers
// orders them; h's peer itself need not be in the view.
func (sp *splits) amongClosest(key string, h [sha256.Size]byte, r int) bool {
	k := sha256.Sum256([]byte(key))
	d := xorDist(h, k)
	closer := 0
	for id, q := range sp.view {
		if id == sp.cfg.Self || q.hash == h {
			continue
		}
		if e := xorDist(q.hash, k); bytes.Compare(e[:], d[:]) < 0 {
			if closer++; closer >= r {
				return false
			}
		}
	}
	return true
}

// mayManage reports whether node p could manage job too: it is the job's
// first manager (its record's Origin), or this node took
// it over from p, or p is among the peers closest to its ID (it may have
// held a copy), or p is in the replica set its copies last went to.
func (sp *splits) mayManage(job string, p NodeID) bool {
	if j := sp.jobs[job]; j != nil && j.Origin == p {
		return true // the job's first manager
	}
	if sp.takenFrom[job] == p || sp.amongClosest(job, sha256.Sum256([]byte(p)), sp.fo.reclaimAsk()) {
		return true
	}
	for _, q := range sp.rep.sets[job] {
		if q == p {
			return true
		}
	}
	return false
}

// onManagerClaim settles a job claimed by two managers.
func (sp *splits) onManagerClaim(c ManagerClaim) {
	j := sp.jobs[c.Job]
	if c.From == sp.cfg.Self {
		return
	}
	if j == nil {
		// Not managed here (or held back after a restart, which Reclaim
		// settles): the claimer stops repeating its claim. If this node
		// gave the job up, it names the manager it yielded to: the
		// claimer may have taken the job over from a copy of this node's
		// record, and must meet that manager (it is not told to drop the
		// job: the winner judges).
		if !c.Reply {
			sp.send(c.From, ManagerAnswer{Job: c.Job, From: sp.cfg.Self, Successor: sp.yieldedTo[c.Job]})
		}
		return
	}
	// A reply to a claim this node sent is an answer it asked for: the
	// peer it asked manages the job too (the campaign found a manager
	// that had forgotten it took the job from the replier refusing the
	// reply, while the replier kept the job on the strength of the claim:
	// two managers for good).
	_, asked := sp.claims[claimKey{c.Job, c.From}]
	trusted := (c.Reply && asked) || sp.mayManage(c.Job, c.From) || slices.Contains(sp.outranked[c.Job], c.Rank.TakenFrom)
	if len(c.Proofs) > MaxClaimProofs {
		c.Proofs = nil // what the wire lets through; the rank falls with them
	}
	if proven := sp.provenRank(j, c.From, c.Rank, c.Proofs); proven != c.Rank {
		// An honest claimer ranks its record by this same rule: a
		// rank above what its proofs show is a forgery (or a bug),
		// never the outcome of a cut.
		sp.tix.refuse(RefuseClaimProof, c.From, c.Job, fmt.Sprintf("claim to manage job %s from %s refused: it claims %s with %d succeeded and %d running (first manager: %v), its proofs show %s, %d and %d (first manager: %v)",
			c.Job, c.From, c.Rank.State, c.Rank.Succeeded, c.Rank.Running, c.Rank.TakenFrom == "", proven.State, proven.Succeeded, proven.Running, proven.TakenFrom == ""))
		return
	}
	mine := sp.disputeRank(j, c.From).rank
	keep := outranks(mine, sp.cfg.Self, c.Rank, c.From)
	if !trusted && !keep {
		// Only a claimer this node could not have met otherwise is
		// refused, and only when it would take the job: a claimer this
		// record outranks still gets the answer that makes it give the
		// job up (a node that took the job over from an adopter of this
		// one's is neither among the closest peers nor known here).
		sp.tix.refuse(RefuseClaim, c.From, c.Job, fmt.Sprintf("claim to manage job %s from %s refused: it could not have taken the job over (neither its former manager nor among the peers closest to the job)", c.Job, c.From))
		return
	}
	delete(sp.claims, claimKey{c.Job, c.From}) // answered
	if !c.Reply {
		sp.claim(c.From, j, true)
	}
	if keep {
		sp.event(j.ID, fmt.Sprintf("%s manages this job too (a cut split its managers): its record (%s, %d succeeded, %d running) ranks below this one (%s, %d, %d); keeping it", c.From, c.Rank.State, c.Rank.Succeeded, c.Rank.Running, mine.State, mine.Succeeded, mine.Running))
		if !slices.Contains(sp.outranked[j.ID], c.From) {
			if len(sp.outranked) >= maxGone {
				clear(sp.outranked)
			}
			sp.outranked[j.ID] = append(sp.outranked[j.ID], c.From)
		}
		if sp.takenFrom[j.ID] == c.From {
			// Settled with the manager it was taken from. Another
			// claimer's defeat says nothing about that one, which may
			// still claim (and must be let).
			delete(sp.takenFrom, j.ID)
		}
		if sp.rep.on() {
			sp.rep.note(j.Clone()) // copies again, over the other's
		}
		return
	}
	sp.yield(j, c)
}

// yield gives job j up to the manager of claim c, whose record ranks
// above this node's.
func (sp *splits) yield(j *JobRecord, c ManagerClaim) {
	why := fmt.Sprintf("%s manages this job too (a cut split its managers) and its record (%s, %d succeeded, %d running) ranks above this one", c.From, c.Rank.State, c.Rank.Succeeded, c.Rank.Running)
	sp.fo.rehomeTo(j.ID, c.From) // this node's own attempts and final reports
	told := map[NodeID]bool{sp.cfg.Self: true}
	tell := func(t *TaskRecord) {
		if t.Node != "" && !told[t.Node] {
			told[t.Node] = true
			sp.send(t.Node, ManagerAnswer{Job: j.ID, From: sp.cfg.Self, Successor: c.From})
		}
	}
	// The executors of replicas that succeeded here still hold their
	// final reports for a while: told, they re-home them to the winner,
	// which learns of successes its side of the cut never saw. Untold,
	// the winner — or this node, taking the job back over from it — ran
	// a replica again that this node knew had succeeded (the fault
	// campaign's seed 8242).
	for i := range j.Tasks {
		if t := &j.Tasks[i]; t.State == TaskSucceeded {
			tell(t)
		}
	}
	if !j.State.Terminal() {
		sp.mgr.endJobWith(j, JobCancelled, "superseded: "+why, tell)
	}
	sp.event(j.ID, why+"; giving it up")
	if sp.rep.on() {
		// The holders of this node's copies drop them: a copy naming this
		// node as manager would be adopted again if this node left.
		var drop []NodeID
		seen := map[NodeID]bool{c.From: true, sp.cfg.Self: true}
		for _, set := range [][]NodeID{sp.rep.sets[j.ID], sp.rep.drop[j.ID], sp.closestPeers(j.ID, sp.cfg.JobReplicas, "")} {
			for _, p := range set {
				if !seen[p] && sp.live(p) {
					seen[p] = true
					drop = append(drop, p)
				}
			}
		}
		if len(drop) > 0 {
			sp.emit(Replicate{Records: []ReplicaCopy{{Record: j.Clone(), Drop: drop}}})
		}
	}
	if len(sp.yieldedTo) >= maxGone {
		clear(sp.yieldedTo)
	}
	sp.yieldedTo[j.ID] = c.From
	sp.forgetDisputes(j.ID)
	delete(sp.jobs, j.ID)
	delete(sp.dirty, j.ID)
	delete(sp.firstRecord, j.ID)
	delete(sp.takenFrom, j.ID)
	delete(sp.fo.adoptedAt, j.ID)
	sp.stale++
	sp.rep.forget(j.ID)
	sp.emit(ForgetJob{Job: j.ID, KeepEvents: true})
}
