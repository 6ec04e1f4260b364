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
	if gone, _ := v.Expire(t0.Add(time.Second + 6*time.Second)); len(gone) != 0 {
		t.Fatalf("expired too early: %v", gone)
	}
	if gone, _ := v.Expire(t0.Add(time.Second + 6*time.Second + time.Millisecond)); len(gone) != 1 || gone[0] != other {
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
	if gone, _ := v.Expire(t0.Add(11 * time.Second)); len(gone) != 0 {
		t.Fatalf("expired 6s after a touch (allowance 6s): %v", gone)
	}
	if gone, _ := v.Expire(t0.Add(11*time.Second + time.Millisecond)); len(gone) != 1 || gone[0] != other {
		t.Fatalf("Expire = %v, want [%s]", gone, other)
	}
}

// TestViewOwnPause: a node whose sweeps stopped for longer than its pause
// limit (its process stopped or starved) counts only the limit of that
// gap as its peers' silence, whatever the pause's length; a peer that
// stays silent after the node woke is dropped once its own misses are
// spent, counted from then. Without the limit the same pause drops it
// at once.
func TestViewOwnPause(t *testing.T) {
	const limit = 2 * time.Second // the service's: its advert interval
	for _, pause := range []time.Duration{3 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute, time.Hour} {
		for _, set := range []bool{true, false} {
			self, other := testPeer(t, peerB), testPeer(t, peerA)
			v := NewView(self, 3)
			if set {
				v.SetPauseAfter(limit)
			}
			t0 := time.Unix(1000, 0)
			a := sampleAdvert(t) // interval 2s: gone after 6s of silence
			v.Observe(a, t0)
			for at := t0; at.Before(t0.Add(time.Second)); at = at.Add(500 * time.Millisecond) {
				if gone, _ := v.Expire(at); len(gone) != 0 {
					t.Fatalf("dropped while it advertised: %v", gone)
				}
			}
			woke := t0.Add(time.Second).Add(pause)
			gone, paused := v.Expire(woke)
			if !set {
				if pause+time.Second > 6*time.Second && len(gone) != 1 {
					t.Fatalf("no limit, pause %v: Expire = %v, want the peer gone (the failure the limit guards against)", pause, gone)
				}
				continue
			}
			if len(gone) != 0 {
				t.Fatalf("pause %v: the peer was dropped on waking: its silence counted the node's own pause", pause)
			}
			if want := pause + 500*time.Millisecond - limit; paused != want {
				t.Fatalf("pause %v: paused %v, want %v", pause, paused, want)
			}
			// Its silence at the wake counts what the node heard (0.5s,
			// to its last sweep) and the limit's part of the pause (2s);
			// the rest of the 6s follows the wake.
			left := 6*time.Second - 500*time.Millisecond - limit
			at := woke
			for ; at.Before(woke.Add(time.Minute)); at = at.Add(500 * time.Millisecond) {
				if gone, _ := v.Expire(at); len(gone) == 1 && gone[0] == other {
					break
				}
			}
			if got := at.Sub(woke); got <= left || got > left+500*time.Millisecond {
				t.Fatalf("pause %v: a silent peer was dropped %v after the wake, want %v", pause, got, left)
			}
		}
	}
}
