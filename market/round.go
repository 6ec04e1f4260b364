package market

import "time"

// round is what every auction round keeps, single-task or gang: when its
// calls for bids went out and when its bid window closes, whom it
// invited, who answered, and what they bid or why they refused.
type round struct {
	start    time.Time
	closeAt  time.Time
	invited  map[NodeID]bool
	answered map[NodeID]bool
	bids     []Bid
	nobids   []NoBid
}

// open starts the round at now with a bid window of window.
func (r *round) open(now time.Time, window time.Duration) {
	r.invited, r.answered, r.bids, r.nobids = map[NodeID]bool{}, map[NodeID]bool{}, nil, nil
	r.start, r.closeAt = now, now.Add(window)
}

// take records bidder's answer, a bid or (b nil) the refusal nb; it
// reports false, recording nothing, for a bidder that answered already.
func (r *round) take(bidder NodeID, b *Bid, nb *NoBid) bool {
	if r.answered[bidder] {
		return false
	}
	r.answered[bidder] = true
	if b != nil {
		r.bids = append(r.bids, *b)
	} else {
		r.nobids = append(r.nobids, *nb)
	}
	return true
}

// silent reports whether some invited node has not answered.
func (r *round) silent() bool { return len(r.answered) < len(r.invited) }

// mayWait reports whether the round may keep its window open past
// closeAt: invited nodes are silent and it is younger than maxWindow.
func (r *round) mayWait(now time.Time, maxWindow time.Duration) bool {
	return now.Sub(r.start) < maxWindow && r.silent()
}

// gone counts an invited node that left as having answered.
func (r *round) gone(id NodeID) {
	if r.invited[id] && !r.answered[id] {
		r.answered[id] = true
	}
}

// call sends cfp to the first n candidates and marks them invited.
func (au *auctioneer) call(r *round, cfp CFP, cands []candidate, n int) {
	for i, c := range cands {
		if i >= n {
			break
		}
		r.invited[c.id] = true
		if j := au.jobs[cfp.Auction.Key.Job]; j != nil {
			cfp.Ticket = au.tix.forPeer(j, c.id)
		}
		au.send(c.id, cfp)
	}
}
