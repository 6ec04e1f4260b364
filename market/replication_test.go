package market

import (
	"testing"
	"time"
)

// TestCopyingUntilReplicated: a new job's first copies go out in the Ready
// of its Submit; Copying says so from then until their Replicated, which
// is what a node waits on before it tells the submitter the job was
// accepted.
func TestCopyingUntilReplicated(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(4))
	m := c.nodes[0]
	if err := m.Submit(c.now, "j", job("f", task("t", 1000))); err != nil {
		t.Fatal(err)
	}
	if m.Copying("j") {
		t.Fatal("Copying before the Ready that sends the copies")
	}
	var batch *Replicate
	for _, e := range m.Ready() {
		if r, ok := e.(Replicate); ok {
			batch = &r
		}
	}
	if batch == nil || len(batch.Records) != 1 || batch.Records[0].Record.ID != "j" || len(batch.Records[0].Peers) != 2 {
		t.Fatalf("Submit's Ready: %+v, want one Replicate of j to both peers", batch)
	}
	if !m.Copying("j") || m.Copying("other") {
		t.Fatal("Copying wrong while the first copies are out")
	}
	m.Replicated(c.now, batch.Batch, map[string]int{"j": 2})
	if m.Copying("j") {
		t.Fatal("Copying after Replicated")
	}
}

// copyMarket is a manager with two peers and no CPU of its own, driven by
// hand: nothing it sends is delivered.
func copyMarket(t *testing.T, cfg Config) *Market {
	t.Helper()
	cfg.Self, cfg.Capacity = "n0", cpuNode(0)
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []NodeID{"n1", "n2"} {
		m.Advert(t0, Peer{ID: p, Capacity: cpuNode(4), Free: cpuNode(4)})
	}
	return m
}

// replicates returns the Replicate effects of a Ready.
func replicates(m *Market) []Replicate {
	var out []Replicate
	for _, e := range m.Ready() {
		if r, ok := e.(Replicate); ok {
			out = append(out, r)
		}
	}
	return out
}

// TestCopyShortfallRetried: a record fewer peers stored than were asked
// goes again with the next batches, ReplicateTries in a row, and then
// not until it changes; one all peers stored is not sent again.
func TestCopyShortfallRetried(t *testing.T) {
	m := copyMarket(t, Config{ReplicateTries: 3, CopyRefresh: -1, SchedulingTimeout: time.Hour})
	if err := m.Submit(t0, "j", job("f", task("t", 1000))); err != nil {
		t.Fatal(err)
	}
	rs := replicates(m)
	now := t0
	sent := 0
	for len(rs) == 1 && rs[0].Records[0].Record.ID == "j" {
		sent++
		m.Replicated(now, rs[0].Batch, map[string]int{"j": 1}) // one of two stored
		now = now.Add(time.Second)
		m.Tick(now)
		rs = replicates(m)
	}
	if sent != 4 { // the first copy and three retries
		t.Fatalf("record sent %d times, want 4 (then given up); then %+v", sent, rs)
	}

	m2 := copyMarket(t, Config{CopyRefresh: -1, SchedulingTimeout: time.Hour})
	if err := m2.Submit(t0, "j", job("f", task("t", 1000))); err != nil {
		t.Fatal(err)
	}
	rs = replicates(m2)
	m2.Replicated(t0, rs[0].Batch, map[string]int{"j": 2})
	m2.Tick(t0.Add(time.Second))
	if rs := replicates(m2); len(rs) != 0 {
		t.Fatalf("a record every peer stored went again: %+v", rs)
	}
}

// TestCopyExpiresAfterRetention: a held copy of a finished job is dropped
// a retention after the job finished, and not before.
func TestCopyExpiresAfterRetention(t *testing.T) {
	m := copyMarket(t, Config{JobRetention: time.Hour})
	rec := JobRecord{ID: "j", Manager: "n1", State: JobSucceeded, Finished: t0, Spec: job("f", task("t", 1000))}
	m.ReplicaStored(t0, rec, []NodeID{"n0", "n2"})
	drops := func(now time.Time) []DropReplica {
		m.Tick(now)
		var out []DropReplica
		for _, e := range m.Ready() {
			if d, ok := e.(DropReplica); ok {
				out = append(out, d)
			}
		}
		return out
	}
	if d := drops(t0.Add(59 * time.Minute)); len(d) != 0 {
		t.Fatalf("dropped before the retention: %+v", d)
	}
	if next := m.NextTick(); next.After(t0.Add(time.Hour)) {
		t.Fatalf("NextTick %v is past the copy's expiry", next.Sub(t0))
	}
	if d := drops(t0.Add(time.Hour)); len(d) != 1 || d[0].Job != "j" || !d[0].Expired {
		t.Fatalf("at the retention: %+v, want j dropped as expired", d)
	}
}
