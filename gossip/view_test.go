package gossip

import (
	"testing"
	"time"
)

func TestViewLifecycle(t *testing.T) {
	self, other := testPeer(t, peerB), testPeer(t, peerA)
	v := NewView(self, 3)
	t0 := time.Unix(1000, 0)
	a := sampleAdvert(t) // from peerA, interval 2s

	own := a
	own.Peer = self
	if got := v.Observe(own, t0); got != Ignored {
		t.Fatalf("own advert: %v, want Ignored", got)
	}
	if got := v.Observe(a, t0); got != Joined {
		t.Fatalf("first advert: %v, want Joined", got)
	}
	if got := v.Observe(a, t0); got != Ignored {
		t.Fatalf("duplicate: %v, want Ignored", got)
	}
	older := a
	older.Seq--
	if got := v.Observe(older, t0); got != Ignored {
		t.Fatalf("stale seq: %v, want Ignored", got)
	}
	restarted := a
	restarted.Boot, restarted.Seq = a.Boot+1, 1
	if got := v.Observe(restarted, t0.Add(time.Second)); got != Rebooted {
		t.Fatalf("new boot with lower seq: %v, want Rebooted", got)
	}
	// Silent for exactly 3 intervals: still there; past it: gone.
	if gone := v.Expire(t0.Add(time.Second + 6*time.Second)); len(gone) != 0 {
		t.Fatalf("expired too early: %v", gone)
	}
	if gone := v.Expire(t0.Add(time.Second + 6*time.Second + time.Millisecond)); len(gone) != 1 || gone[0] != other {
		t.Fatalf("Expire = %v, want [%s]", gone, other)
	}
	if v.Len() != 0 {
		t.Fatalf("view still holds %d members", v.Len())
	}
}

func TestViewLeave(t *testing.T) {
	v := NewView(testPeer(t, peerB), 0)
	a := sampleAdvert(t)
	v.Observe(a, time.Unix(0, 0))
	leave := a
	leave.Seq++
	leave.Leaving = true
	if got := v.Observe(leave, time.Unix(1, 0)); got != Left {
		t.Fatalf("leave: %v, want Left", got)
	}
	if _, ok := v.Get(a.Peer); ok {
		t.Fatal("peer still in view after leaving")
	}
	if got := v.Observe(leave, time.Unix(2, 0)); got != Ignored {
		t.Fatalf("leave of unknown peer: %v, want Ignored", got)
	}
}

// TestViewTouch: a peer heard from directly stays in the view for its
// silence allowance from then on; an unknown peer is not added, and an
// older touch does not move the clock back.
func TestViewTouch(t *testing.T) {
	other := testPeer(t, peerA)
	v := NewView(testPeer(t, peerB), 3)
	t0 := time.Unix(1000, 0)
	a := sampleAdvert(t) // from peerA, interval 2s
	if v.Touch(other, t0) {
		t.Fatal("Touch of an unknown peer reported it known")
	}
	if v.Len() != 0 {
		t.Fatal("Touch added an unknown peer")
	}
	v.Observe(a, t0)
	if !v.Touch(other, t0.Add(5*time.Second)) {
		t.Fatal("Touch of a known peer reported it unknown")
	}
	v.Touch(other, t0.Add(time.Second)) // late and older: ignored
	if gone := v.Expire(t0.Add(11 * time.Second)); len(gone) != 0 {
		t.Fatalf("expired 6s after a touch (allowance 6s): %v", gone)
	}
	if gone := v.Expire(t0.Add(11*time.Second + time.Millisecond)); len(gone) != 1 || gone[0] != other {
		t.Fatalf("Expire = %v, want [%s]", gone, other)
	}
}
