package market

import (
	"bytes"
	"crypto/sha256"
	"slices"
)

// Closest returns the r of ids nearest to key (all of them when r < 0),
// nearest first: by the XOR distance between the SHA-256 digest of each
// ID's text and that of key, Kademlia's metric, ties by ID. Every node
// computes the same order from the same IDs, so a job's and a task's
// replica peers are found again by whoever looks for them: job-record
// copies, their adopter, checkpoint copies.
func Closest(key string, ids []NodeID, r int) []NodeID {
	k := sha256.Sum256([]byte(key))
	cs := make([]keyed, len(ids))
	for i, id := range ids {
		cs[i] = keyed{id: id, dist: xorDist(sha256.Sum256([]byte(id)), k)}
	}
	return nearest(cs, r)
}

// keyed is a node and its distance to a key.
type keyed struct {
	id   NodeID
	dist [sha256.Size]byte
}

// nearest sorts cs nearest first, ties by ID, and returns the first r
// IDs (all of them when r < 0).
func nearest(cs []keyed, r int) []NodeID {
	slices.SortFunc(cs, func(a, b keyed) int {
		if c := bytes.Compare(a.dist[:], b.dist[:]); c != 0 {
			return c
		}
		return cmpNode(a.id, b.id)
	})
	if r < 0 || r > len(cs) {
		r = len(cs)
	}
	out := make([]NodeID, r)
	for i := range out {
		out[i] = cs[i].id
	}
	return out
}

func xorDist(h, k [sha256.Size]byte) [sha256.Size]byte {
	for i := range h {
		h[i] ^= k[i]
	}
	return h
}

func cmpNode(a, b NodeID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// closestPeers returns the r peers of the view (this node excluded, and
// those in skip) nearest to key, as Closest orders them (every one when
// r < 0), using each view entry's cached digest.
func (sh *shared) closestPeers(key string, r int, skip NodeID) []NodeID {
	k := sha256.Sum256([]byte(key))
	cs := make([]keyed, 0, len(sh.view))
	for id, p := range sh.view {
		if id != skip && id != sh.cfg.Self {
			cs = append(cs, keyed{id: id, dist: xorDist(p.hash, k)})
		}
	}
	return nearest(cs, r)
}
