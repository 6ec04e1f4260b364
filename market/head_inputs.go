package market

import (
	"cmp"
	"math"
	"slices"
	"strings"

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
	// order holds the same room times sorted by time, then ID, for
	// shadowOf's binary searches: a pass over the view at every advert
	// was a fifth of a long SWF replay's time.
	order      []roomEntry
	rebuilding bool // headInputsFor is filling order, to sort it once
	// waiting holds the peers whose adverts name a waiting gang: the
	// head's candidates besides this node's own.
	waiting map[NodeID]WaitingGang
	// first is the first of waiting in the reservation order when
	// firstOK: adverts repeat their gang far more often than they change
	// it, and a pass over a hundred candidates at every advert was a
	// sixth of a long SWF replay's time.
	first   WaitingGang
	firstOK bool
	// fsVersion is the fair share's version first was found under: the
	// order depends on the owners' factors (gangAhead).
	fsVersion uint64
}

// roomEntry is a capable peer's raw room time, in headInputs.order.
type roomEntry struct {
	at   int64
	slot int32 // its peer's index in ids and ats
}

// compareRoom orders entry e against a room time at of peer id, as
// order is sorted: by time, then by ID.
func (hi *headInputs) compareRoom(e roomEntry, at int64, id NodeID) int {
	if c := cmp.Compare(e.at, at); c != 0 {
		return c
	}
	return strings.Compare(string(hi.ids[e.slot]), string(id))
}

// countBefore is how many entries of order come before (at, id): an
// earlier time, or the same one and a smaller ID (none when id is "").
func (hi *headInputs) countBefore(at int64, id NodeID) int {
	lo, up := 0, len(hi.order)
	for lo < up {
		mid := int(uint(lo+up) >> 1)
		if hi.compareRoom(hi.order[mid], at, id) < 0 {
			lo = mid + 1
		} else {
			up = mid
		}
	}
	return lo
}

// addRoom gives peer id a slot, with room time at, and returns it.
func (hi *headInputs) addRoom(id NodeID, at int64) int32 {
	slot := int32(len(hi.ids))
	hi.ids = append(hi.ids, id)
	hi.ats = append(hi.ats, at)
	if e := (roomEntry{at, slot}); hi.rebuilding {
		hi.order = append(hi.order, e)
	} else {
		hi.order = slices.Insert(hi.order, hi.countBefore(at, id), e)
	}
	return slot
}

// moveRoom keeps order sorted when slot's room time changes from one to
// another, with one copy of the entries between its old place and its
// new one (they hold no pointers: a plain memory move).
func (hi *headInputs) moveRoom(slot int32, from, to int64) {
	id := hi.ids[slot]
	i, j := hi.countBefore(from, id), hi.countBefore(to, id)
	if j > i {
		j-- // its old place, before the new one, is vacated
		copy(hi.order[i:j], hi.order[i+1:j+1])
	} else {
		copy(hi.order[j+1:i+1], hi.order[j:i])
	}
	hi.order[j] = roomEntry{to, slot}
}

// removeRoom takes slot's entry, of room time at, out of order.
func (hi *headInputs) removeRoom(slot int32, at int64) {
	i := hi.countBefore(at, hi.ids[slot])
	hi.order = append(hi.order[:i], hi.order[i+1:]...)
}

// before is how many peers come before this node (self's room time
// selfAt, already raised to now; its ID selfID) for a head's room: a
// raised room time earlier than selfAt, or the same one and a smaller ID.
// Counting stops at limit.
func (hi *headInputs) before(selfAt, now int64, selfID NodeID, limit int) int {
	if selfAt > now {
		// Raising to now changes no time's order against selfAt, nor
		// makes one equal to it.
		return hi.countBefore(selfAt, selfID)
	}
	// selfAt is now: the peers before it have room now (a raw time up
	// to now) and a smaller ID.
	n := 0
	for _, e := range hi.order[:hi.countBefore(now+1, "")] {
		if hi.ids[e.slot] < selfID {
			if n++; n == limit {
				break
			}
		}
	}
	return n
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
func (gs *gangManager) headInputsFor(w WaitingGang) *headInputs {
	hi := &gs.hin
	if hi.gen != 0 && hi.w.Gang == w.Gang {
		return hi
	}
	hi.w, hi.gen = w, hi.gen+1
	if hi.gen == 0 {
		hi.gen = 1
		for _, p := range gs.view { // wrapped: no slot may look current
			p.hin = headSlot{}
		}
	}
	hi.ids, hi.ats, hi.order = hi.ids[:0], hi.ats[:0], hi.order[:0]
	hi.rebuilding = true
	for _, p := range gs.view {
		gs.noteHeadInput(p)
	}
	slices.SortFunc(hi.order, func(a, b roomEntry) int { return hi.compareRoom(a, b.at, hi.ids[b.slot]) })
	hi.rebuilding = false
	return hi
}

// peerAdvertised updates what the head's computation keeps of peer p
// after its advert.
func (gs *gangManager) peerAdvertised(p *Peer) {
	hi := &gs.hin
	old, had := hi.waiting[p.ID]
	switch {
	case p.Waiting.Gang != "":
		if hi.waiting == nil {
			hi.waiting = map[NodeID]WaitingGang{}
		}
		hi.waiting[p.ID] = p.Waiting
		hi.keepFirst(old, had, p.Waiting, gs.waitingBefore)
	case had:
		delete(hi.waiting, p.ID)
		hi.keepFirst(old, had, WaitingGang{}, gs.waitingBefore)
	}
	gs.noteHeadInput(p)
}

// keepFirst keeps first current when a peer's candidate old (had: it
// named one) becomes w (the zero value: none), or marks it unknown when
// only a pass over waiting can tell; before is the order.
func (hi *headInputs) keepFirst(old WaitingGang, had bool, w WaitingGang, before func(a, b WaitingGang) bool) {
	if !hi.firstOK {
		return
	}
	if had && old.Gang == hi.first.Gang {
		if w.Gang != old.Gang || w.Priority != old.Priority || !w.Since.Equal(old.Since) || w.Owner != old.Owner {
			hi.firstOK = false // the first moved or left
			return
		}
		hi.first = w // same place in the order; its other fields may have changed
		return
	}
	if w.Gang != "" && (hi.first.Gang == "" || before(w, hi.first)) {
		hi.first = w
	}
}

// firstWaiting is the first of the peers' candidates in the reservation
// order (before), the zero value when there is none.
func (hi *headInputs) firstWaiting(before func(a, b WaitingGang) bool) WaitingGang {
	if !hi.firstOK {
		hi.first, hi.firstOK = WaitingGang{}, true
		for _, w := range hi.waiting {
			if hi.first.Gang == "" || before(w, hi.first) {
				hi.first = w
			}
		}
	}
	return hi.first
}

// noteHeadInput updates peer p's room time for the candidate kept.
func (gs *gangManager) noteHeadInput(p *Peer) {
	hi := &gs.hin
	if hi.gen == 0 {
		return
	}
	if p.hin.gen != hi.gen {
		p.hin = headSlot{gen: hi.gen, idx: -1}
		if roughFit(p.Capacity, hi.w.Request) && couldHold(p.Site, p.Labels, p.Limits, p.Capacity, hi.w.Request) == "" {
			p.hin.idx = hi.addRoom(p.ID, peerRoomFor(p, hi.w))
		}
		return
	}
	if i := p.hin.idx; i >= 0 {
		if at := peerRoomFor(p, hi.w); at != hi.ats[i] {
			hi.moveRoom(i, hi.ats[i], at)
			hi.ats[i] = at
		}
	}
}

// peerDropped removes what the head's computation keeps of peer p when
// it leaves the view.
func (gs *gangManager) peerDropped(p *Peer) {
	hi := &gs.hin
	if old, had := hi.waiting[p.ID]; had {
		delete(hi.waiting, p.ID)
		hi.keepFirst(old, had, WaitingGang{}, gs.waitingBefore)
	}
	if hi.gen == 0 || p.hin.gen != hi.gen || p.hin.idx < 0 {
		return
	}
	i, last := p.hin.idx, int32(len(hi.ids)-1)
	hi.removeRoom(i, hi.ats[i])
	if i != last {
		hi.order[hi.countBefore(hi.ats[last], hi.ids[last])].slot = i
		hi.ids[i], hi.ats[i] = hi.ids[last], hi.ats[last]
		if q := gs.view[hi.ids[i]]; q != nil {
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
