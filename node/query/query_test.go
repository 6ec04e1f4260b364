package query

import (
	"bufio"
	"context"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market/wire"
)

// hosts starts n hosts on 127.0.0.1, the others connected to the first.
func hosts(t *testing.T, n int) []host.Host {
	t.Helper()
	var out []host.Host
	for range n {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		out = append(out, h)
	}
	for _, h := range out[1:] {
		if err := h.Connect(context.Background(), peer.AddrInfo{ID: out[0].ID(), Addrs: out[0].Addrs()}); err != nil {
			t.Fatal(err)
		}
		if err := out[0].Connect(context.Background(), peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestAskAndFanout: a question reaches the peer's answer function and its
// reply comes back; a fan-out returns the one peer that has the job, and
// ErrNotFound when none has.
func TestAskAndFanout(t *testing.T) {
	hs := hosts(t, 3)
	asker := New(hs[0], func(wire.Query) wire.QueryReply { return wire.QueryReply{} })
	New(hs[1], func(q wire.Query) wire.QueryReply { return wire.QueryReply{} })
	New(hs[2], func(q wire.Query) wire.QueryReply {
		if q.Job == "j-1" {
			return wire.QueryReply{Found: true, Body: []byte(`{"id":"j-1"}`)}
		}
		return wire.QueryReply{Error: "no such job"}
	})
	ctx := context.Background()
	rep, err := asker.Ask(ctx, hs[2].ID(), wire.Query{Kind: "status", Job: "j-9"})
	if err != nil || rep.Error != "no such job" {
		t.Fatalf("ask: %+v %v", rep, err)
	}
	rep, from, err := asker.Fanout(ctx, []peer.ID{hs[1].ID(), hs[2].ID()}, wire.Query{Kind: "status", Job: "j-1"})
	if err != nil || from != hs[2].ID() || string(rep.Body) != `{"id":"j-1"}` {
		t.Fatalf("fanout: %+v from %s, %v", rep, from, err)
	}
	if _, _, err := asker.Fanout(ctx, []peer.ID{hs[1].ID()}, wire.Query{Kind: "status", Job: "j-1"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("fanout to peers without the job: %v", err)
	}
}

// TestMalformedQuery: a frame that is not a query is answered with an
// error naming the problem, not passed on.
func TestMalformedQuery(t *testing.T) {
	hs := hosts(t, 2)
	New(hs[1], func(wire.Query) wire.QueryReply { t.Error("a malformed query was answered"); return wire.QueryReply{} })
	st, err := hs[0].NewStream(context.Background(), hs[1].ID(), Protocol)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := bufio.NewWriter(st)
	if err := wire.WriteFrame(w, []byte{0xff, 0xff}); err != nil || w.Flush() != nil {
		t.Fatal(err)
	}
	b, err := wire.ReadFrame(bufio.NewReader(st), wire.MaxQueryReplyBytes)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := wire.DecodeQueryReply(b)
	if err != nil || rep.Error == "" || rep.Found {
		t.Fatalf("reply %+v, %v", rep, err)
	}
}
