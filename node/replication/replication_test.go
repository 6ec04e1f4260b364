package replication

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/store"
)

// end is one side of a test: a host on loopback, its copies bucket and
// the copies its Service handed on.
type end struct {
	h      host.Host
	svc    *Service
	copies *store.Bucket[Copy]
	mu     sync.Mutex
	stored []Copy
}

func (e *end) id() market.NodeID { return market.NodeID(e.h.ID().String()) }

func (e *end) handedOn() []Copy {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.stored)
}

// newEnds starts n hosts on 127.0.0.1, each serving the protocol with the
// market's check, connected to the first.
func newEnds(t testing.TB, n int) []*end {
	t.Helper()
	var out []*end
	for range n {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		st, err := store.Open(filepath.Join(t.TempDir(), "db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		e := &end{h: h, copies: store.NewBucket[Copy](st, "replicas").AllowLarge(MaxFrame).WithCodec(EncodeCopy, DecodeCopy)}
		e.svc = New(h, Options{Copies: e.copies, Check: func(from market.NodeID, rec market.JobRecord, held *market.HeldCopy) error {
			return market.CheckReplica(nil, time.Now(), from, rec, held)
		}, Stored: func(cs []Copy) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.stored = append(e.stored, cs...)
		}})
		out = append(out, e)
	}
	for _, e := range out[1:] {
		if err := e.h.Connect(context.Background(), peer.AddrInfo{ID: out[0].h.ID(), Addrs: out[0].h.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// record is a valid job record of job id managed by mgr.
func record(t testing.TB, id string, mgr market.NodeID) market.JobRecord {
	t.Helper()
	js, err := spec.Parse([]byte(`{"name": "`+id+`", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "100m"}}]}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return market.JobRecord{ID: id, Spec: *js, Manager: mgr, State: market.JobPending}
}

func held(t *testing.T, e *end, id string) (Copy, bool) {
	t.Helper()
	c, ok, err := e.copies.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return c, ok
}

// TestPushAndServe: copies reach a peer over one stream, which the next
// push reuses; a record whose manager is not the sender is refused alone,
// by name, while the others of its frame are stored and handed on.
func TestPushAndServe(t *testing.T) {
	ends := newEnds(t, 2)
	a, b := ends[0], ends[1]
	set := []market.NodeID{b.id()}
	var copies []market.ReplicaCopy
	for i := range 3 {
		copies = append(copies, market.ReplicaCopy{Record: record(t, fmt.Sprintf("j-%d", i), a.id()), Peers: set})
	}
	copies = append(copies, market.ReplicaCopy{Record: record(t, "j-forged", b.id()), Peers: set}) // claims b manages it
	stored, err := a.svc.Push(context.Background(), copies)
	if err == nil || !strings.Contains(err.Error(), "j-forged") {
		t.Fatalf("push with a forged record: err %v, want it refused by name", err)
	}
	for i := range 3 {
		id := fmt.Sprintf("j-%d", i)
		if stored[id] != 1 {
			t.Fatalf("%s stored on %d peers: %v", id, stored[id], stored)
		}
		if c, ok := held(t, b, id); !ok || c.Record.Manager != a.id() || !slices.Equal(c.Replicas, set) || c.Updated.IsZero() {
			t.Fatalf("%s on b: %v %+v", id, ok, c)
		}
	}
	if _, ok := held(t, b, "j-forged"); ok || stored["j-forged"] != 0 {
		t.Fatal("forged record stored")
	}
	if got := len(b.handedOn()); got != 3 {
		t.Fatalf("%d copies handed on, want 3", got)
	}
	link := a.svc.link(b.h.ID())
	link.mu.Lock()
	s := link.s
	link.mu.Unlock()
	if s == nil || s.Protocol() != Protocol {
		t.Fatalf("no %s stream kept: %v", Protocol, s)
	}
	if stored, err := a.svc.Push(context.Background(), []market.ReplicaCopy{{Record: record(t, "j-again", a.id()), Peers: set}}); err != nil || stored["j-again"] != 1 {
		t.Fatalf("second push: %v %v", stored, err)
	}
	link.mu.Lock()
	same := link.s == s
	link.mu.Unlock()
	if !same {
		t.Fatal("a second push opened another stream")
	}
}

// TestDropMovedCopy: a record whose replica set no longer holds the peer
// (its manager's copies moved) deletes the peer's copy, counts as done,
// and is handed on so that the market forgets it.
func TestDropMovedCopy(t *testing.T) {
	ends := newEnds(t, 3)
	a, b, c := ends[0], ends[1], ends[2]
	rec := record(t, "j-moved", a.id())
	if stored, err := a.svc.Push(context.Background(), []market.ReplicaCopy{{Record: rec, Peers: []market.NodeID{b.id()}}}); err != nil || stored[rec.ID] != 1 {
		t.Fatalf("first copy: %v %v", stored, err)
	}
	moved := []market.NodeID{c.id()}
	stored, err := a.svc.Push(context.Background(), []market.ReplicaCopy{{Record: rec, Peers: moved, Drop: []market.NodeID{b.id()}}})
	if err != nil || stored[rec.ID] != 2 {
		t.Fatalf("moved copy: stored %v, err %v; want 2 (c stored, b dropped)", stored, err)
	}
	if _, ok := held(t, b, rec.ID); ok {
		t.Fatal("b keeps a copy it was told to drop")
	}
	if cp, ok := held(t, c, rec.ID); !ok || !slices.Equal(cp.Replicas, moved) {
		t.Fatalf("c's copy: %v %+v", ok, cp)
	}
	on := b.handedOn()
	if len(on) != 2 || slices.Contains(on[1].Replicas, b.id()) {
		t.Fatalf("b handed on %+v, want the copy, then the record without b in its set", on)
	}
}

// asker opens a stream from a to b and returns a function that sends one
// request frame on it and reads the answer.
func asker(t *testing.T, a, b *end) func(body []byte) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := a.h.NewStream(ctx, b.h.ID(), Protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r, w := bufio.NewReader(s), bufio.NewWriter(s)
	return func(body []byte) answer {
		t.Helper()
		if err := wire.WriteFrame(w, body); err != nil || w.Flush() != nil {
			t.Fatal(err)
		}
		b, err := wire.ReadFrame(r, maxAnswer)
		if err != nil {
			t.Fatal(err)
		}
		var a answer
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// TestMalformedFrame: a frame that does not decode is answered with an
// error naming the problem, and the stream still serves the next frame.
func TestMalformedFrame(t *testing.T) {
	ends := newEnds(t, 2)
	a, b := ends[0], ends[1]
	ask := asker(t, a, b)
	e, err := encodeElement(record(t, "j-after", a.id()), []market.NodeID{b.id()})
	if err != nil {
		t.Fatal(err)
	}
	_, good := requestFrame([][]byte{e})
	for _, bad := range []struct {
		name string
		body []byte
		want string
	}{
		{"JSON", []byte(`{"records": []}`), "not a frame of job records"},
		{"length past the end", []byte{0x0a, 5, 1, 0}, "not a frame of job records"},
		{"record cut short", good[:len(good)-4], "not a frame of job records"},
		{"a byte after the records", append(bytes.Clone(good), 0), "not a frame of job records"},
		{"a record without its record", []byte{0x0a, 0}, "record 1 of 1: wire: copy.record: required"},
	} {
		if rep := ask(bad.body); !strings.Contains(rep.Error, "malformed job records") || !strings.Contains(rep.Error, bad.want) || rep.Stored != 0 {
			t.Fatalf("%s: answered %+v, want an error with %q", bad.name, rep, bad.want)
		}
	}
	if rep := ask(good); rep.Error != "" || rep.Stored != 1 {
		t.Fatalf("frame after malformed ones answered %+v", rep)
	}
	if _, ok := held(t, b, "j-after"); !ok {
		t.Fatal("j-after not on b")
	}
}

// TestRequestFrame: frames hold at most recordsPerFrame records and
// maxFrame bytes, at least one record each, and decode to the records
// they say they hold, in order, replica sets included.
func TestRequestFrame(t *testing.T) {
	elem := func(i int, reason string) []byte {
		e, err := encodeElement(market.JobRecord{ID: fmt.Sprintf("j-%d", i), Reason: reason}, []market.NodeID{"p1", market.NodeID(fmt.Sprintf("p-%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	small := func(i int) []byte { return elem(i, "") }
	big := func(i int) []byte { return elem(i, strings.Repeat("x", maxFrame/3)) }
	for _, tc := range []struct {
		name   string
		elems  [][]byte
		frames []int // records per frame
	}{
		{"one", [][]byte{small(0)}, []int{1}},
		{"a frame's worth", [][]byte{small(0), small(1), small(2), small(3), small(4), small(5), small(6), small(7)}, []int{8}},
		{"split by count", [][]byte{small(0), small(1), small(2), small(3), small(4), small(5), small(6), small(7), small(8), small(9)}, []int{8, 2}},
		{"split by bytes", [][]byte{big(0), big(1), big(2), big(3)}, []int{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elems := tc.elems
			var got []int
			next := 0
			for len(elems) > 0 {
				k, body := requestFrame(elems)
				if k < 1 || len(body) > maxFrame {
					t.Fatalf("frame of %d records, %d bytes", k, len(body))
				}
				dec, err := decodeFrame(body)
				if err != nil || len(dec) != k {
					t.Fatalf("frame decodes to %d records (%v), says %d", len(dec), err, k)
				}
				for _, d := range dec {
					if want := fmt.Sprintf("j-%d", next); d.Record.ID != want || fmt.Sprint(d.Replicas) != fmt.Sprintf("[p1 p-%d]", next) {
						t.Fatalf("record %s with replicas %v, want %s", d.Record.ID, d.Replicas, want)
					}
					next++
				}
				got = append(got, k)
				elems = elems[k:]
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.frames) {
				t.Fatalf("frames %v, want %v", got, tc.frames)
			}
		})
	}
}

// TestNewCopiesBounded: one manager may have a node keep only so many
// new copies per window; updates of copies held pass, and the refusal
// is counted.
func TestNewCopiesBounded(t *testing.T) {
	ends := newEnds(t, 2)
	a, b := ends[0], ends[1]
	refused := 0
	b.svc.opts.MaxNew = 2
	b.svc.opts.Refused = func(r string) {
		if r == RefusedQuota {
			refused++
		}
	}
	set := []market.NodeID{b.id()}
	push := func(id string) error {
		_, err := a.svc.Push(context.Background(), []market.ReplicaCopy{{Record: record(t, id, a.id()), Peers: set}})
		return err
	}
	for _, id := range []string{"j-1", "j-2", "j-1"} {
		if err := push(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if err := push("j-3"); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a third new copy: %v", err)
	}
	if _, ok := held(t, b, "j-3"); ok || refused != 1 {
		t.Fatalf("j-3 held %v, %d refusals counted", ok, refused)
	}
}
