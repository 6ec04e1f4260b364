package market

import (
	"cmp"
	"fmt"
	"strings"
)

// NodeID names a node (its libp2p peer ID in string form).
type NodeID string

// TaskKey names one replica of one task of one job.
type TaskKey struct {
	Job     string `json:"job"`
	Task    string `json:"task"`
	Replica int    `json:"replica"`
}

// String renders the key as job/task/replica.
func (k TaskKey) String() string { return fmt.Sprintf("%s/%s/%d", k.Job, k.Task, k.Replica) }

// AuctionID names one auction round for one epoch of a task replica.
type AuctionID struct {
	Key   TaskKey `json:"key"`
	Epoch uint64  `json:"epoch"`
	Round int     `json:"round"`
}

// String renders the auction ID as job/task/replica@epoch#round.
func (a AuctionID) String() string { return fmt.Sprintf("%s@%d#%d", a.Key, a.Epoch, a.Round) }

// Compare orders task keys by job, task, then replica: -1, 0 or +1.
func (k TaskKey) Compare(o TaskKey) int {
	if c := strings.Compare(k.Job, o.Job); c != 0 {
		return c
	}
	if c := strings.Compare(k.Task, o.Task); c != 0 {
		return c
	}
	return cmp.Compare(k.Replica, o.Replica)
}
