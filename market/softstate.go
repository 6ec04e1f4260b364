package market

import (
	"slices"

	"github.com/agora-sched/agora/devices/resource"
)

// SoftState is what a node's adverts say of its market: the room its
// tasks leave, its queue, the gang reservation it honours, the gang
// waiting at the head it sees and when the head has room. Like raft's
// SoftState it is an output, not state to keep in step: the caller
// reads it after carrying out a turn's Ready and publishes the value;
// it shares nothing with the market.
type SoftState struct {
	Free     resource.Vector
	Queue    int
	Reserved ReservedRoom
	Waiting  WaitingGang
	HeadRoom HeadRoom
	// Users is what the limited users' jobs managed here hold and wait
	// for (userlimits.go).
	Users []UserUsage
	// Steal is what the queue could give a thief (steal.go).
	Steal StealOffer
	// Draining says the node was drained (drain.go).
	Draining bool
}

// SoftState is the market's soft state now.
func (m *Market) SoftState() SoftState {
	return SoftState{Free: m.Free(), Queue: m.QueueLen(), Reserved: m.gang.reserved(), Waiting: m.gang.waiting(), HeadRoom: m.HeadRoom(), Users: m.UserUsage(), Steal: m.StealOffer(), Draining: m.con.draining}
}

// Moved reports whether s says something an advert should carry at once
// that o does not: free CPU, memory or GPU share, the queue, the
// reservation, the head, users' usage, what the queue could give a
// thief, or whether it is drained.
func (s SoftState) Moved(o SoftState) bool {
	return s.Free.CPU != o.Free.CPU || s.Free.Memory != o.Free.Memory || s.Free.GPUShare() != o.Free.GPUShare() ||
		s.Queue != o.Queue || s.Reserved.Gang != o.Reserved.Gang || s.Reserved.Unreserved.CPU != o.Reserved.Unreserved.CPU ||
		s.Waiting.Gang != o.Waiting.Gang || !s.HeadRoom.Equal(o.HeadRoom) || !slices.Equal(s.Users, o.Users) || s.Steal != o.Steal ||
		s.Draining != o.Draining
}

// StealOffer is what this node's queue could give a thief now.
func (m *Market) StealOffer() StealOffer { return m.con.stealOffer() }
