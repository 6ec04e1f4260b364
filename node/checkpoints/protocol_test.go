package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/runtime/checkpoint"
	"github.com/agora-sched/agora/store"
)

// The peers of the protocol tests: the node serving, the executor that
// pushes, and another admitted peer that never ran the task.
const (
	holder  = peer.ID("holder")
	pusher  = peer.ID("pusher")
	mallory = peer.ID("mallory")
)

// ckService is a service with only its store: enough to answer the
// checkpoint protocol's requests.
func ckService(t *testing.T) *Service {
	t.Helper()
	s, err := store.Open(t.TempDir(), store.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &Service{cs: NewStore(s), self: holder, refused: func(string) {}, maxManifests: maxManifestsFrom, maxChunks: maxChunksFrom,
		puts: map[peer.ID]int{}}
}

// snapshotOf writes files into a fresh directory and snapshots it into a
// memory store, as the executor would before pushing.
func snapshotOf(t *testing.T, key Key, seq uint64, files map[string]string) (checkpoint.Manifest, []byte, *checkpoint.MemStore) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ms := checkpoint.NewMemStore()
	m, _, err := checkpoint.Snapshot(dir, checkpoint.Meta{Job: key.Job, Task: key.Task, Replica: key.Replica, Epoch: seq >> 32, Seq: seq, Created: time.Now()}, ms)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := checkpoint.EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, raw, ms
}

// push serves the requests an executor sends to a replica and returns the
// manifest request's reply.
func push(t *testing.T, n *Service, from peer.ID, key Key, m checkpoint.Manifest, raw []byte, ms *checkpoint.MemStore) ckReply {
	t.Helper()
	now := time.Now()
	rep := n.answer(from, ckRequest{Op: opMissing, IDs: m.ChunkIDs()}, now)
	if rep.Error != "" {
		t.Fatal(rep.Error)
	}
	for _, id := range rep.Missing {
		data, _, _ := ms.Get(id)
		if r := n.answer(from, ckRequest{Op: opPut, ID: id, Data: data}, now); r.Error != "" {
			t.Fatal(r.Error)
		}
	}
	return n.answer(from, ckRequest{Op: opManifest, Key: &key, Manifest: raw}, now)
}

// TestProtocolServe: a replica keeps a pushed manifest only when
// it is complete, belongs to its key and is newer; it serves it and its
// chunks back; malformed requests are refused naming the problem.
func TestProtocolServe(t *testing.T) {
	n := ckService(t)
	now := time.Now()
	key := Key{Job: "j-1", Task: "train", Replica: 0}
	m, raw, ms := snapshotOf(t, key, 1<<32|1, map[string]string{"count": "17\n", "state": strings.Repeat("x", 100_000)})

	if r := n.answer(pusher, ckRequest{Op: opManifest, Key: &key, Manifest: raw}, now); !strings.Contains(r.Error, "chunks missing") {
		t.Fatalf("manifest before its chunks: %+v", r)
	}
	if r := push(t, n, pusher, key, m, raw, ms); r.Error != "" || !r.Stored {
		t.Fatalf("push: %+v", r)
	}
	if r := push(t, n, pusher, key, m, raw, ms); r.Error != "" || r.Stored {
		t.Fatalf("same seq again must not be stored: %+v", r)
	}
	if r := n.answer(pusher, ckRequest{Op: opMissing, IDs: m.ChunkIDs()}, now); r.Error != "" || len(r.Missing) != 0 {
		t.Fatalf("missing after push: %+v", r)
	}
	older, oraw, oms := snapshotOf(t, key, 1<<32, map[string]string{"count": "3\n"})
	if r := push(t, n, pusher, key, older, oraw, oms); r.Error != "" || r.Stored {
		t.Fatalf("older seq must not replace the newer: %+v", r)
	}
	other := Key{Job: "j-1", Task: "eval", Replica: 0}
	if r := n.answer(pusher, ckRequest{Op: opManifest, Key: &other, Manifest: raw}, now); !strings.Contains(r.Error, "differs from the key") {
		t.Fatalf("manifest under another key: %+v", r)
	}

	r := n.answer(pusher, ckRequest{Op: opGetManifest, Key: &key, Allow: []market.Placement{{Node: market.NodeID(pusher.String()), Epoch: 1}}}, now)
	if !r.Found || r.Seq != m.Seq || r.From != pusher.String() {
		t.Fatalf("get-manifest: %+v", r)
	}
	got, err := checkpoint.DecodeManifest(r.Manifest)
	if err != nil || got.Seq != m.Seq {
		t.Fatalf("served manifest: %v %+v", err, got)
	}
	if r := n.answer(pusher, ckRequest{Op: opGetManifest, Key: &other}, now); r.Found || r.Error != "" {
		t.Fatalf("get-manifest of an unknown key: %+v", r)
	}
	id := m.ChunkIDs()[0]
	want, _, _ := ms.Get(id)
	if r := n.answer(pusher, ckRequest{Op: opGet, ID: id}, now); !r.Found || string(r.Data) != string(want) {
		t.Fatalf("get %s: found %v, %d bytes", id, r.Found, len(r.Data))
	}

	bad := []struct {
		name string
		req  ckRequest
		want string
	}{
		{"unknown op", ckRequest{Op: "delete"}, "unknown operation"},
		{"bad id", ckRequest{Op: opMissing, IDs: []string{"../x"}}, "invalid chunk id"},
		{"too many ids", ckRequest{Op: opMissing, IDs: make([]string, maxCkIDs+1)}, "exceeds"},
		{"wrong hash", ckRequest{Op: opPut, ID: id, Data: []byte("not it")}, "does not hash"},
		{"oversized chunk", ckRequest{Op: opPut, ID: id, Data: make([]byte, checkpoint.MaxChunkSize+1)}, "exceeds"},
		{"no key", ckRequest{Op: opGetManifest}, "key: missing"},
		{"bad job", ckRequest{Op: opGetManifest, Key: &Key{Job: "a/b", Task: "t"}}, "key.job"},
		{"bad task", ckRequest{Op: opGetManifest, Key: &Key{Job: "j", Task: ".."}}, "key.task"},
		{"bad replica", ckRequest{Op: opGetManifest, Key: &Key{Job: "j", Task: "t", Replica: -1}}, "key.replica"},
		{"bad manifest", ckRequest{Op: opManifest, Key: &key, Manifest: []byte(`{"version":1,"job":"j-1","extra":1}`)}, "invalid manifest"},
	}
	for _, c := range bad {
		if r := n.answer(pusher, c.req, now); !strings.Contains(r.Error, c.want) {
			t.Errorf("%s: error %q, want it to mention %q", c.name, r.Error, c.want)
		}
	}
	var req ckRequest
	if err := decodeCk([]byte(`{"op":"get","id":"x","mode":1}`), &req); err == nil {
		t.Error("a request with an unknown field was accepted")
	}
}

// TestStoreGC: chunks of dropped manifests are collected, chunks
// a peer just pushed are spared for chunkGrace, and the sweep drops
// manifests not updated for manifestTTL.
func TestStoreGC(t *testing.T) {
	n := ckService(t)
	cs := n.cs
	now := time.Now()
	key := Key{Job: "j-2", Task: "t", Replica: 1}
	m, raw, ms := snapshotOf(t, key, 1<<32|1, map[string]string{"a": "alpha", "b": "beta"})
	if r := push(t, n, pusher, key, m, raw, ms); !r.Stored {
		t.Fatalf("push: %+v", r)
	}
	// A chunk pushed for a manifest that never came, and one a local
	// snapshot wrote and no manifest kept.
	orphan := []byte("orphan chunk")
	oid := chunkIDOf(orphan)
	if err := cs.putRemote(oid, orphan, now); err != nil {
		t.Fatal(err)
	}
	local := []byte("local leftover")
	lid := chunkIDOf(local)
	if err := cs.Put(lid, local); err != nil {
		t.Fatal(err)
	}
	if dropped, err := cs.GC(now); err != nil || dropped != 1 {
		t.Fatalf("gc dropped %d (%v), want only the local leftover", dropped, err)
	}
	if ok, _ := cs.Has(lid); ok {
		t.Fatal("local leftover survived gc")
	}
	if ok, _ := cs.Has(oid); !ok {
		t.Fatal("a chunk pushed within the grace period was collected")
	}
	// The pushed manifest's chunks were marked recent too; after the
	// grace and the TTL both are gone.
	later := now.Add(manifestTTL + time.Minute)
	mans, chunks, err := cs.Sweep(later, func(string) bool { return false })
	if err != nil || mans != 1 || chunks != 3 {
		t.Fatalf("sweep: %d manifests, %d chunks, %v; want 1 and 3", mans, chunks, err)
	}
	if _, ok, _ := cs.Manifest(key.String(), nil); ok {
		t.Fatal("stale manifest survived the sweep")
	}
	// An active task's manifest is never stale.
	if r := push(t, n, pusher, key, m, raw, ms); !r.Stored {
		t.Fatalf("push again: %+v", r)
	}
	if mans, _, _ := cs.Sweep(later.Add(manifestTTL*2), func(string) bool { return true }); mans != 0 {
		t.Fatal("the manifest of a running task was swept")
	}
}

func chunkIDOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestManifestFromOtherPeer: a peer that never held the award pushes a
// manifest with a higher seq for a task; it is kept apart from the
// genuine executor's, and a resume that allows only the recorded
// placement gets the genuine one. A seq not of its manifest's epoch is
// refused; one peer's manifests and chunks are bounded.
func TestManifestFromOtherPeer(t *testing.T) {
	n := ckService(t)
	now := time.Now()
	var refused []string
	n.refused = func(r string) { refused = append(refused, r) }
	key := Key{Job: "j-3", Task: "train", Replica: 0}
	m, raw, ms := snapshotOf(t, key, 2<<32|7, map[string]string{"weights": "genuine"})
	if r := push(t, n, pusher, key, m, raw, ms); !r.Stored {
		t.Fatalf("genuine push: %+v", r)
	}
	fm, fraw, fms := snapshotOf(t, key, 9<<32|1, map[string]string{"weights": "planted"})
	if r := push(t, n, mallory, key, fm, fraw, fms); !r.Stored {
		t.Fatalf("the other peer's push is kept in its own slot: %+v", r)
	}
	genuine := []market.Placement{{Node: market.NodeID(pusher.String()), Epoch: 2}}
	r := n.answer(pusher, ckRequest{Op: opGetManifest, Key: &key, Allow: genuine}, now)
	if !r.Found || r.Seq != m.Seq || r.From != pusher.String() {
		t.Fatalf("resume allowing the recorded placement got seq %d from %q, want %d from the executor", r.Seq, r.From, m.Seq)
	}
	if r := n.answer(pusher, ckRequest{Op: opGetManifest, Key: &key}, now); r.Found {
		t.Fatal("a resume allowing no placement got a manifest")
	}
	spec := market.TaskSpec{Epoch: 10, Previous: genuine}
	if spec.MayResumeFrom("self", market.NodeID(mallory.String()), 9) || !spec.MayResumeFrom("self", market.NodeID(pusher.String()), 2) ||
		spec.MayResumeFrom("self", market.NodeID(pusher.String()), 3) || !spec.MayResumeFrom("self", "self", 4) || spec.MayResumeFrom("self", "self", 11) {
		t.Fatal("MayResumeFrom: wrong decision")
	}

	unbound, uraw, ums := snapshotOf(t, Key{Job: "j-4", Task: "t"}, 3<<32|1, map[string]string{"a": "b"})
	unbound.Epoch = 4
	uraw, _ = checkpoint.EncodeManifest(unbound)
	if r := push(t, n, pusher, Key{Job: "j-4", Task: "t"}, unbound, uraw, ums); !strings.Contains(r.Error, "not of epoch") {
		t.Fatalf("seq of another epoch: %+v", r)
	}

	n.maxManifests, n.maxChunks = 1, 4
	k2 := Key{Job: "j-5", Task: "t"}
	m2, raw2, ms2 := snapshotOf(t, k2, 1<<32|1, map[string]string{"x": "y"})
	if r := push(t, n, mallory, k2, m2, raw2, ms2); !strings.Contains(r.Error, "manifests of yours") {
		t.Fatalf("a second manifest of one peer over a limit of one: %+v", r)
	}
	clear(n.puts)
	for i := 0; ; i++ {
		data := []byte(fmt.Sprintf("chunk %d", i))
		r := n.answer(mallory, ckRequest{Op: opPut, ID: chunkIDOf(data), Data: data}, now)
		if r.Error != "" {
			if i < 4 || !strings.Contains(r.Error, "over the limit") {
				t.Fatalf("put %d: %s", i, r.Error)
			}
			break
		}
	}
	if want := []string{RefusedManifest, RefusedManifests, RefusedChunks}; !slices.Equal(refused, want) {
		t.Fatalf("refusals counted %v, want %v", refused, want)
	}
}
