package admission

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/testnet/waitfor"
)

const echo = "/test/echo/1.0.0"

// authority is a test authority.
type authority struct {
	key  ed25519.PrivateKey
	book *auth.Book
}

func newAuthority(t *testing.T) authority {
	t.Helper()
	k, err := auth.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return authority{key: k, book: auth.NewBook(k.Public().(ed25519.PublicKey))}
}

func (au authority) admit(t *testing.T, h host.Host) auth.Chain {
	t.Helper()
	ch, err := auth.Issuer{Key: au.key}.IssueNode(h.ID().String(), "lab", nil, time.Now(), time.Hour, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// member is a host with an Admission and an echo service on its guarded
// host.
type member struct {
	h  host.Host
	a  *Admission
	mu sync.Mutex
	// refused and dropped count what the Admission reported.
	refused map[string]int
	dropped []peer.ID
}

func newMember(t *testing.T, au authority) *member {
	t.Helper()
	h := newHost(t)
	m := &member{h: h, refused: map[string]int{}}
	a, err := New(h, Options{Book: au.book, Chain: au.admit(t, h), Timeout: 2 * time.Second,
		Refused: func(r string) { m.mu.Lock(); m.refused[r]++; m.mu.Unlock() },
		Dropped: func(p peer.ID) { m.mu.Lock(); m.dropped = append(m.dropped, p); m.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	m.a = a
	a.Host().SetStreamHandler(echo, func(s network.Stream) {
		defer s.Close()
		b, err := wire.ReadFrame(bufio.NewReader(s), 64)
		if err == nil {
			_ = wire.WriteFrame(s, b)
		}
	})
	return m
}

func (m *member) count(reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused[reason]
}

// ping sends an echo over h (raw or guarded) to p.
func ping(h host.Host, p peer.ID) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s, err := h.NewStream(ctx, p, echo)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := wire.WriteFrame(s, []byte("hi")); err != nil {
		return err
	}
	_, err = wire.ReadFrame(bufio.NewReader(s), 64)
	return err
}

func connect(t *testing.T, a, b host.Host) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()})
}

// TestAdmission: two members of one authority admit each other and talk;
// a member of another authority and a host with no admission at all are
// refused, disconnected, and their streams reset; a revocation taken on
// one member drops the revoked peer there and travels in the next
// handshake.
func TestAdmission(t *testing.T) {
	x, y := newAuthority(t), newAuthority(t)
	a, b := newMember(t, x), newMember(t, x)
	if err := connect(t, a.h, b.h); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 5*time.Second, "A and B to admit each other", func() bool { return a.a.Admitted(b.h.ID()) && b.a.Admitted(a.h.ID()) })
	if err := ping(a.a.Host(), b.h.ID()); err != nil {
		t.Fatalf("echo between members: %v", err)
	}

	foreign := newMember(t, y)
	_ = connect(t, foreign.h, a.h)
	// Each refuses the other; whichever is first closes the connection,
	// and the other may then see only the closed stream.
	waitfor.Cond(t, 5*time.Second, "the foreign member to be refused", func() bool {
		return a.count(ReasonCertificate)+foreign.count(ReasonCertificate) > 0
	})
	if a.a.Admitted(foreign.h.ID()) || foreign.a.Admitted(a.h.ID()) {
		t.Fatal("members of different authorities admitted each other")
	}
	waitfor.Cond(t, 5*time.Second, "the foreign member to be disconnected", func() bool {
		return a.h.Network().Connectedness(foreign.h.ID()) != network.Connected
	})

	outsider := newHost(t) // no admission at all
	if err := connect(t, outsider, a.h); err != nil {
		t.Fatal(err)
	}
	if err := ping(outsider, a.h.ID()); err == nil {
		t.Fatal("an outsider's stream reached a member's service")
	}
	// The stream is reset by the guard, or finds the connection already
	// closed by the refusal: either way it is counted.
	waitfor.Cond(t, 5*time.Second, "the outsider to be counted", func() bool { return a.count(ReasonStream)+a.count(ReasonNoCertificate) > 0 })
	waitfor.Cond(t, 5*time.Second, "A to refuse the outsider", func() bool { return a.count(ReasonNoCertificate) > 0 })
	if err := ping(a.a.Host(), outsider.ID()); err == nil {
		t.Fatal("a member opened a stream to an outsider")
	}

	// Revoke B on A: A drops it; C, admitted later, learns the
	// revocation from A's handshake and refuses B too.
	r, err := auth.NewRevocation(b.h.ID().String(), time.Now(), x.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if added, err := a.a.Revoke(r); !added || err != nil {
		t.Fatalf("revoke: %v %v", added, err)
	}
	waitfor.Cond(t, 5*time.Second, "A to drop B", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.dropped) == 1 && a.dropped[0] == b.h.ID()
	})
	if a.a.Admitted(b.h.ID()) || a.a.AdmitAdvert(b.h.ID(), b.a.opts.Chain.Encode()) == nil {
		t.Fatal("a revoked peer is admitted, or its advert's certificate accepted")
	}
	c := newMember(t, x)
	if err := connect(t, c.h, a.h); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 5*time.Second, "C to learn the revocation from A", func() bool { return len(c.a.Revocations()) == 1 })
	_ = connect(t, c.h, b.h)
	waitfor.Cond(t, 5*time.Second, "C to refuse B", func() bool { return c.count(ReasonCertificate) > 0 })
	if c.a.Admitted(b.h.ID()) {
		t.Fatal("C admitted a revoked peer")
	}
}

func TestNewRefusesForeignSelfCertificate(t *testing.T) {
	x, y := newAuthority(t), newAuthority(t)
	h := newHost(t)
	if _, err := New(h, Options{Book: x.book, Chain: y.admit(t, h)}); err == nil {
		t.Fatal("a node started with another authority's certificate")
	}
	other := newHost(t)
	if _, err := New(h, Options{Book: x.book, Chain: x.admit(t, other)}); err == nil {
		t.Fatal("a node started with another peer's certificate")
	}
}

func TestHelloDecodeRefusesBadInput(t *testing.T) {
	x := newAuthority(t)
	ch := x.admit(t, newHost(t))
	good := hello{chain: ch}.encode()
	for _, b := range [][]byte{nil, {9}, good[:len(good)-3], append(append([]byte(nil), good...), 0)} {
		if _, err := decodeHello(b); err == nil {
			t.Errorf("%x: accepted", b)
		}
	}
	if h, err := decodeHello(good); err != nil || len(h.chain) != 1 {
		t.Fatalf("good hello: %v", err)
	}
}

// TestValidateRevocation: a revocation that does not verify is rejected
// (its relay's score falls: no honest node relays it); one refused only
// for when it is checked (dated ahead of this node's clock beyond the
// skew) is dropped without blame; a good one is taken and relayed.
func TestValidateRevocation(t *testing.T) {
	au := newAuthority(t)
	m := newMember(t, au)
	msg := func(r auth.Revocation) *pubsub.Message {
		return &pubsub.Message{Message: &pb.Message{From: []byte(m.h.ID()), Data: r.Encode()}}
	}
	revocation := func(target string, at time.Time) auth.Revocation {
		r, err := auth.NewRevocation(target, at, au.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tampered := revocation("peerT", time.Now())
	tampered.Target = "peerU"
	for _, tc := range []struct {
		name string
		r    auth.Revocation
		want pubsub.ValidationResult
	}{
		{"good", revocation("peerG", time.Now()), pubsub.ValidationAccept},
		{"tampered", tampered, pubsub.ValidationReject},
		{"dated an hour ahead", revocation("peerF", time.Now().Add(time.Hour)), pubsub.ValidationIgnore},
	} {
		if got := m.a.validateRevocation(context.Background(), m.h.ID(), msg(tc.r)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := len(m.a.Revocations()); n != 1 {
		t.Fatalf("%d revocations taken, want the good one", n)
	}
}
