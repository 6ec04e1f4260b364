package market

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// Epochs name a replica's attempts: a manager gives each placement a new
// one, persists it before any message carries it, and an executor's
// report is judged by it. Two managers of one job — the job's manager and
// a copy holder that took it over while cut off from it, or two copy
// holders on the two sides of a cut — both start from the same record,
// so counting up from it alone they would hand out the same epochs for
// different attempts (the fault campaign found 465 such attempts in
// 10,000 seeds); so would a node that took a job over twice, from copies
// of different ages. Each take-over therefore numbers in a range of its
// own, named by the record's EpochTag:
//
//   - a job never taken over (tag 0, its first manager) counts 1, 2, 3 …
//     while the epoch is below 2²⁰, and from then on as below with tag 0;
//   - a take-over draws a non-zero 20-bit tag from the adopter's node ID,
//     the job ID and the time (epochTag), and each placement sets the
//     epoch to (c+1)<<20 | tag, where c is the epoch it starts from
//     shifted right by 20 bits.
//
// An adopter's epoch is above every epoch its record holds, so the order
// of epochs is still the order in which the attempts were made along one
// manager's line; two take-overs of one job collide only when their tags
// do (one in 2²⁰ per pair, see docs/resilience.md). Epochs stay below
// 2³², as checkpoint manifests need (their seq is epoch<<32 | n): a
// replica placed by adopters more than 4,094 times counts up by one
// again.

// nextEpoch is the epoch of a replica's next attempt after e, in job j.
func (sh *shared) nextEpoch(j *JobRecord, e uint64) uint64 {
	hi := e >> EpochTagBits
	if hi+1 >= 1<<(32-EpochTagBits) || (j.EpochTag == 0 && hi == 0) {
		return e + 1
	}
	return (hi+1)<<EpochTagBits | uint64(j.EpochTag)
}

// EpochTagBits is the width of a take-over's tag in an epoch.
const EpochTagBits = 20

// epochTag is the tag of node's take-over of job at now: never zero.
func epochTag(node NodeID, job string, now time.Time) uint32 {
	h := fnv.New32a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(job))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano())))
	if t := h.Sum32() & (1<<EpochTagBits - 1); t != 0 {
		return t
	}
	return 1
}

// epochSteps is how many placements lie between epochs from and to
// (to above from) along one manager's numbering: the first manager's
// count up by one, a take-over's by one above the tag.
func epochSteps(from, to uint64) uint64 {
	if to <= from {
		return 0
	}
	if hf, ht := from>>EpochTagBits, to>>EpochTagBits; ht > hf {
		return ht - hf
	}
	return to - from
}
