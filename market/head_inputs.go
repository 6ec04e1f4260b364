package market

import (
	"math"

	"github.com/agora-sched/agora/devices/resource"
)

// headInputs keeps what the view says of one head candidate, so that the
// head can be computed again at every event without a pass over the view:
// adverts arrive for every peer at every change, and each would otherwise
// cost a walk of a thousand-peer map with a resource fit per peer. It
// holds, for the peers that could ever hold a replica of the gang, the
// room time each one's last advert gives it; an advert updates its
// sender's entry only.
type headInputs struct {
	w WaitingGang // the candidate; zero when none was computed
	// gen numbers the candidates kept, so that a peer's headSlot from an
	// earlier one reads as not yet known.
	gen uint32
	ids []NodeID
	ats []int64 // raw room times: 0 room now, math.MaxInt64 never
	buf []int64 // shadowOf's buffer
	// waiting holds the peers whose adverts name a waiting gang: the
	// head's candidates besides this node's own.
	waiting map[NodeID]WaitingGang
}

// headSlot is a peer's place in headInputs for candidate generation gen:
// its index in ids and ats, or -1 when it could never hold a replica (a
// peer's capacity, site, labels and limits do not change while it stays
// in the view).
type headSlot struct {
	gen uint32
	idx int32
}

// headInputsFor returns the inputs of candidate w, computed afresh from
// the view when they were kept for another gang.
func (m *Market) headInputsFor(w WaitingGang) *headInputs {
	hi := &m.hin
	if hi.gen != 0 && hi.w.Gang == w.Gang {
		return hi
	}
	hi.w, hi.gen = w, hi.gen+1
	if hi.gen == 0 {
		hi.gen = 1
		for _, p := range m.view { // wrapped: no slot may look current
			p.hin = headSlot{}
		}
	}
	hi.ids, hi.ats = hi.ids[:0], hi.ats[:0]
	for _, p := range m.view {
		m.noteHeadInput(p)
	}
	return hi
}

// peerAdvertised updates what the head's computation keeps of peer p
// after its advert.
func (m *Market) peerAdvertised(p *Peer) {
	hi := &m.hin
	switch {
	case p.Waiting.Gang != "":
		if hi.waiting == nil {
			hi.waiting = map[NodeID]WaitingGang{}
		}
		hi.waiting[p.ID] = p.Waiting
	case hi.waiting != nil:
		delete(hi.waiting, p.ID)
	}
	m.noteHeadInput(p)
}

// noteHeadInput updates peer p's room time for the candidate kept.
func (m *Market) noteHeadInput(p *Peer) {
	hi := &m.hin
	if hi.gen == 0 {
		return
	}
	if p.hin.gen != hi.gen {
		p.hin = headSlot{gen: hi.gen, idx: -1}
		if roughFit(p.Capacity, hi.w.Request) && couldHold(p.Site, p.Labels, p.Limits, p.Capacity, hi.w.Request) == "" {
			p.hin.idx = int32(len(hi.ids))
			hi.ids = append(hi.ids, p.ID)
			hi.ats = append(hi.ats, 0)
		}
	}
	if p.hin.idx >= 0 {
		hi.ats[p.hin.idx] = peerRoomFor(p, hi.w)
	}
}

// peerDropped removes what the head's computation keeps of peer p when
// it leaves the view.
func (m *Market) peerDropped(p *Peer) {
	hi := &m.hin
	delete(hi.waiting, p.ID)
	if hi.gen == 0 || p.hin.gen != hi.gen || p.hin.idx < 0 {
		return
	}
	i, last := p.hin.idx, int32(len(hi.ids)-1)
	if i != last {
		hi.ids[i], hi.ats[i] = hi.ids[last], hi.ats[last]
		if q := m.view[hi.ids[i]]; q != nil {
			q.hin.idx = i
		}
	}
	hi.ids, hi.ats = hi.ids[:last], hi.ats[:last]
	p.hin = headSlot{}
}

// peerRoomFor is when peer p, which could hold a replica of gang w, will
// have room for one by its last advert: the time its head_room says when
// it sees w as the head, else now if its free room (beside another
// gang's reservation) holds one, else never.
func peerRoomFor(p *Peer, w WaitingGang) int64 {
	if p.HeadRoom.Gang == w.Gang {
		if p.HeadRoom.Never {
			return math.MaxInt64
		}
		return nanos(p.HeadRoom.At)
	}
	free := p.Free
	if p.Reserved.Gang != "" && p.Reserved.Gang != w.Gang {
		free = p.Reserved.Unreserved
	}
	if fits(free, w.Request) {
		return 0
	}
	return math.MaxInt64
}

// fits reports whether req fits in free, without building resource.Fit's
// reason where the scalar resources decide.
func fits(free resource.Vector, req resource.Request) bool {
	if req.CPU > free.CPU || req.Memory > free.Memory || req.Disk > free.Disk {
		return false
	}
	if len(req.Devices) == 0 && !req.GPU.Wants() {
		return true
	}
	_, why := resource.Fit(free, req)
	return why == ""
}
