package market

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/agora-sched/agora/market/spec"
)

// Claims with proof. Two managers of one job settle it by the ranks of
// their records (split.go); a rank a claimer declares is taken only as
// far as other nodes vouch for it:
//
//   - an executor signs each report it sends of a replica it holds
//     (queued or running) or that succeeded, naming the job's task, the
//     attempt's epoch, the state and the manager it reports to
//     (ProofBytes); the manager keeps the latest such proof in the
//     replica's record (TaskRecord.Proof);
//   - a ManagerClaim carries those proofs; the receiver counts a replica
//     as running or succeeded for the claimer only by a proof that
//     verifies, names the claimer as manager and was signed by another
//     node (a claimer's word about its own runs is no evidence);
//   - the job's state is taken as declared only as far as the counts
//     bear it out (succeeded: every replica proven; otherwise running
//     with any proof, pending without), and only the job's first manager
//     (its record's Origin) ranks as such.
//
// Both sides of an honest dispute rank both records with this same rule
// (provenRank), so they still agree on the winner; a claim whose
// declared rank its proofs do not bear out is refused, counted and
// logged (RefuseClaimProof). What an admitted node can no longer do is
// take a job over with a message: it must show other nodes' signatures
// for the progress it claims, for attempts it placed (docs/security.md
// says what remains).

// Prover signs this node's statements about the replicas it runs and
// checks other nodes'. A node signs with its identity key, and a node ID
// names the public key that checks it (node/prover.go).
type Prover interface {
	Sign(msg []byte) []byte
	Verify(node NodeID, msg, sig []byte) bool
}

// hashProver is the Prover of a market configured without one: its
// "signature" is a digest anyone can compute. It keeps the code path of
// a real node in harnesses that model no adversary; it proves nothing.
type hashProver struct{ self NodeID }

func (h hashProver) Sign(msg []byte) []byte { return hashSig(h.self, msg) }
func (h hashProver) Verify(node NodeID, msg, sig []byte) bool {
	return string(hashSig(node, msg)) == string(sig)
}

func hashSig(node NodeID, msg []byte) []byte {
	s := sha256.New()
	s.Write([]byte(node))
	s.Write([]byte{0})
	s.Write(msg)
	return s.Sum(nil)[:16]
}

// ProofBytes is what an executor signs: a domain tag, the replica, the
// attempt's epoch, whether it succeeded (or is held, queued or running)
// and the manager it reports to. docs/protocol.md gives the layout.
func ProofBytes(key TaskKey, epoch uint64, succeeded bool, manager NodeID) []byte {
	b := make([]byte, 0, 64+len(key.Job)+len(key.Task)+len(manager))
	b = append(b, "agora/task-proof/v1\x00"...)
	for _, s := range []string{key.Job, key.Task} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(key.Replica))
	b = binary.BigEndian.AppendUint64(b, epoch)
	if succeeded {
		b = append(b, 'S')
	} else {
		b = append(b, 'L')
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(manager)))
	return append(b, manager...)
}

// sign adds this node's proof to a report of its own about a replica it
// holds or that succeeded, sent to manager to.
func (sh *shared) sign(to NodeID, s TaskStatus) TaskStatus {
	if s.Node != sh.cfg.Self || to == sh.cfg.Self {
		return s // another node's report is its to sign
	}
	s.Proof = nil // a stored report re-sent to another manager
	done, ok := proofState(s.State)
	if !ok {
		return s
	}
	p := signedProof{s.Epoch, done, to, nil}
	if q, ok := sh.signed[s.Key]; ok && q.epoch == p.epoch && q.done == p.done && q.manager == p.manager {
		s.Proof = q.sig
		return s
	}
	p.sig = sh.cfg.Prover.Sign(ProofBytes(s.Key, s.Epoch, done, to))
	if sh.signed == nil || len(sh.signed) >= maxSigned {
		sh.signed = map[TaskKey]signedProof{}
	}
	sh.signed[s.Key] = p
	s.Proof = p.sig
	return s
}

// signedProof is a proof this node signed: what it says, and the
// signature.
type signedProof struct {
	epoch   uint64
	done    bool
	manager NodeID
	sig     []byte
}

// maxSigned bounds the proofs kept for renewals; past it the memory
// starts afresh (a renewal then signs again).
const maxSigned = 4096

// proofState says whether a replica in state st has a proof, and of
// which kind: held (awarded, running) or succeeded (done).
func proofState(st TaskState) (done, ok bool) {
	switch st {
	case TaskAwarded, TaskRunning:
		return false, true
	case TaskSucceeded:
		return true, true
	}
	return false, false
}

// TaskProof is one replica's proof in a ManagerClaim: Node's signature
// (Sig) over ProofBytes(Key, Epoch, Succeeded, the claimer).
type TaskProof struct {
	Key       TaskKey `json:"key"`
	Epoch     uint64  `json:"epoch"`
	Node      NodeID  `json:"node"`
	Succeeded bool    `json:"succeeded,omitempty"`
	Sig       []byte  `json:"sig"`
}

// MaxClaimProofs bounds the proofs of one claim: one per replica, and a
// job has at most spec.MaxJobReplicas.
const MaxClaimProofs = spec.MaxJobReplicas

// ownProofs are the proofs of job j's record as this node manages it:
// one per replica held elsewhere whose latest report to this node it
// has, signed for this node, in the record's replica order (a copy's proofs name the manager it was
// taken from, and prove nothing for this one).
func (sp *splits) ownProofs(j *JobRecord) []TaskProof {
	var out []TaskProof
	for i := range j.Tasks {
		t := &j.Tasks[i]
		if len(t.Proof) == 0 || t.Node == "" || t.Node == sp.cfg.Self {
			continue
		}
		done, ok := proofState(t.State)
		if ok && sp.cfg.Prover.Verify(t.Node, ProofBytes(t.Key, t.Epoch, done, sp.cfg.Self), t.Proof) {
			out = append(out, TaskProof{Key: t.Key, Epoch: t.Epoch, Node: t.Node, Succeeded: done, Sig: t.Proof})
		}
	}
	return out
}

// loserSuccess reports whether s reports the success of replica t run
// by the job's first manager on itself, placed in its own line of epochs
// (tag 0), after it gave the job up to this node: a run its proofs could
// not show (its own work), whose final report it re-homed here when it
// yielded. Taken, the replica does not run again (the fault campaign's
// seed 4012); it is the first manager's word, which the job's first
// manager could have given of any replica before it yielded.
func (sp *splits) loserSuccess(j *JobRecord, t *TaskRecord, s TaskStatus) bool {
	if s.State != TaskSucceeded || s.Node != j.Origin || s.Node == sp.cfg.Self || j.State.Terminal() || j.isGang(t.Key.Task) {
		return false
	}
	if t.State != TaskPending && t.State != TaskAwarded && t.State != TaskRunning {
		return false
	}
	if s.Epoch >= 1<<EpochTagBits && s.Epoch&(1<<EpochTagBits-1) != 0 {
		return false // placed by a node that took the job over
	}
	return slices.Contains(sp.outranked[j.ID], s.Node)
}

// provenRank is the rank, in job j, of claimer's record declared as d
// with proofs: d as far as the proofs bear it out (see above). It is the
// same function of its inputs at every node.
func (sp *splits) provenRank(j *JobRecord, claimer NodeID, d ClaimRank, proofs []TaskProof) ClaimRank {
	keys := make(map[TaskKey]bool, len(j.Tasks))
	for i := range j.Tasks {
		keys[j.Tasks[i].Key] = true
	}
	done := map[TaskKey]bool{}
	live := map[TaskKey]bool{}
	for _, p := range proofs {
		if !keys[p.Key] || p.Node == claimer || p.Node == "" ||
			!sp.cfg.Prover.Verify(p.Node, ProofBytes(p.Key, p.Epoch, p.Succeeded, claimer), p.Sig) {
			continue
		}
		if p.Succeeded {
			done[p.Key] = true
		} else {
			live[p.Key] = true
		}
	}
	for k := range done {
		delete(live, k)
	}
	r := ClaimRank{State: d.State, Succeeded: min(d.Succeeded, len(done)), Running: min(d.Running, len(live)), TakenFrom: d.TakenFrom}
	if r.TakenFrom == "" && claimer != j.Origin {
		r.TakenFrom = j.Origin
		if r.TakenFrom == "" {
			r.TakenFrom = "?"
		}
	}
	most := JobPending
	switch {
	case len(j.Tasks) > 0 && r.Succeeded == len(j.Tasks):
		most = JobSucceeded
	case r.Succeeded+r.Running > 0:
		most = JobRunning
	}
	if stateOrder(r.State) > stateOrder(most) {
		r.State = most
	}
	return r
}

// dispute is what this node claims a job with against one peer: the
// rank, and the proofs that bear it out.
type dispute struct {
	rank   ClaimRank
	proofs []TaskProof
}
