package data

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/runtime/checkpoint"
	"github.com/agora-sched/agora/store"
)

// node is one test node: a loopback libp2p host with a data service.
type node struct {
	h   host.Host
	svc *Service
	s   *store.Store
}

func newNode(t testing.TB, opts Options) *node {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s, err := store.Open(t.TempDir()) // on disk, as a node's
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &node{h: h, svc: New(h, s, opts), s: s}
}

func connect(t *testing.T, nodes ...*node) {
	t.Helper()
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if err := a.h.Connect(context.Background(), peer.AddrInfo{ID: b.h.ID(), Addrs: b.h.Addrs()}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// keep snapshots files into n's store as a task's outputs and returns
// the manifest ID.
func (n *node) keep(t *testing.T, files map[string][]byte) (string, checkpoint.Manifest) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m, _, err := checkpoint.Snapshot(dir, checkpoint.Meta{Job: "j", Task: "prep", Created: time.Now()}, n.svc.Store())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := checkpoint.EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	id, err := n.svc.Store().Keep(raw, Record{Job: "j", Kind: KindOutput, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return id, m
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// restored restores m from n's store and returns the named file.
func (n *node) restored(t *testing.T, m checkpoint.Manifest, name string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	if err := checkpoint.Restore(context.Background(), m, dir, n.svc.Store()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFetchSkipsDamagedCopies (issue 23): a chunk damaged on the first
// holder is detected by its hash and fetched from the next; the data
// arrives byte-identical.
func TestFetchSkipsDamagedCopies(t *testing.T) {
	bad, good, c := newNode(t, Options{}), newNode(t, Options{}), newNode(t, Options{})
	connect(t, bad, good, c)
	body := random(t, 3<<20)
	files := map[string][]byte{"out.bin": body}
	id, m := good.keep(t, files)
	// The bad holder has the same manifest and chunks, but one damaged.
	_, raw, _, _, _ := good.svc.Store().Manifest(id)
	if _, err := bad.svc.Store().Keep(raw, Record{Kind: KindOutput, Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, cid := range m.ChunkIDs() {
		b, _, _ := good.svc.Store().Get(cid)
		if err := bad.svc.Store().Put(cid, b); err != nil {
			t.Fatal(err)
		}
	}
	victim := m.Entries[0].Chunks[1]
	if err := bad.s.PutBlob(chunkPrefix+victim, []byte("not the chunk")); err != nil {
		t.Fatal(err)
	}
	got, err := c.svc.Fetch(context.Background(), id, []peer.ID{bad.h.ID(), good.h.ID()}, Record{Kind: KindCache, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.restored(t, got, "out.bin"), body) {
		t.Fatal("the fetched file differs")
	}
	if c.svc.Fetched.Load() < int64(len(body)) {
		t.Errorf("fetched %d bytes of %d", c.svc.Fetched.Load(), len(body))
	}
	// With only the damaged holder, the fetch fails naming why.
	d := newNode(t, Options{})
	connect(t, bad, d)
	_, err = d.svc.Fetch(context.Background(), id, []peer.ID{bad.h.ID()}, Record{Kind: KindCache, Expires: time.Now().Add(time.Hour)})
	if !errors.Is(err, ErrNoHolder) || !strings.Contains(err.Error(), "1 chunks missing") {
		t.Fatalf("fetch from a damaged holder only: %v", err)
	}
}

// TestOfferCopies: a node offered data fetches and keeps it; a node over
// its limit for others' data refuses, saying so.
func TestOfferCopies(t *testing.T) {
	a, b, small := newNode(t, Options{}), newNode(t, Options{}), newNode(t, Options{MaxBytes: 1 << 20})
	connect(t, a, b, small)
	id, m := a.keep(t, map[string][]byte{"x": random(t, 2<<20)})
	rec := Record{Job: "j", Kind: KindOutput, Bytes: m.TotalBytes}
	kept := a.svc.Replicate(context.Background(), id, rec, time.Hour, []peer.ID{small.h.ID(), b.h.ID()}, 2)
	if len(kept) != 1 || kept[0] != b.h.ID() {
		t.Fatalf("kept by %v, want only b", kept)
	}
	if !b.svc.Store().Complete(id) {
		t.Fatal("b does not hold all of it")
	}
	if small.svc.Store().Complete(id) {
		t.Fatal("the small node kept it")
	}
	err := a.svc.Offer(context.Background(), small.h.ID(), id, rec, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "at most 1048576 bytes") {
		t.Fatalf("offer to the small node: %v", err)
	}
	if err := a.svc.Offer(context.Background(), b.h.ID(), strings.Repeat("0", 64), rec, time.Hour); err == nil {
		t.Fatal("an offer of data the offerer lacks was stored")
	}
	c := newNode(t, Options{})
	connect(t, a, c)
	liar := rec
	liar.Bytes = 1 << 10
	if err := a.svc.Offer(context.Background(), c.h.ID(), id, liar, time.Hour); err == nil || !strings.Contains(err.Error(), "more than the 1024 offered") {
		t.Fatalf("an offer smaller than its data: %v", err)
	}
	if c.svc.Fetched.Load() != 0 {
		t.Fatalf("%d bytes moved for an offer that lied about its size", c.svc.Fetched.Load())
	}
	// Expired, it goes at the next sweep, chunks and all.
	if _, _, err := b.svc.Store().Sweep(time.Now().Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok, _ := b.svc.Store().Manifest(id); ok {
		t.Fatal("the expired manifest is still kept")
	}
	if ok, _ := b.svc.Store().Has(m.Entries[0].Chunks[0]); ok {
		t.Fatal("the expired manifest's chunk is still kept")
	}
}
