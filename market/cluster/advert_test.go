package cluster

import (
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
)

// TestAdvertFollowsSilentChange: a node that takes a reservation emits
// nothing, yet its next advert must carry it, as a real node's periodic
// advert would; before, the reservation stayed out of its peers' views
// until the node happened to act, and on a long SDSC replay managers
// waited on room that had been free for hours.
func TestAdvertFollowsSilentChange(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mcs []market.Config
	for _, id := range []market.NodeID{"n0", "n1", "n2"} {
		mcs = append(mcs, market.Config{Self: id, Capacity: resource.Vector{CPU: 1000, Memory: 1 << 30}})
	}
	q := NewQueue()
	c, err := New(Config{Markets: mcs, Start: start, AdvertEvery: 2 * time.Second, Clock: q})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	q.RunUntil(c, 3*time.Second)
	if got := c.nodes[1].adv.Reserved.Gang; got != "" {
		t.Fatalf("n1 advertises a reservation for %q before any", got)
	}
	c.Do(1, func(m *market.Market, now time.Time) {
		m.Step(now, "n0", market.Reserve{
			Auction: market.AuctionID{Key: market.TaskKey{Job: "j", Task: "t"}, Epoch: 1, Round: 1},
			Manager: "n0", Request: resource.Request{CPU: 1000}, Priority: 5,
			Until: now.Add(time.Minute), Since: now,
		})
	})
	if got := c.nodes[1].Market.Reserved().Gang; got != "j/t" {
		t.Fatalf("n1 keeps room for %q, want j/t (the scenario is broken)", got)
	}
	q.RunUntil(c, 6*time.Second)
	if got := c.nodes[1].adv.Reserved.Gang; got != "j/t" {
		t.Errorf("n1's advert after two intervals keeps room for %q, want j/t", got)
	}
}
