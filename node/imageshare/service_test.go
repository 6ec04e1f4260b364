package imageshare

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// fakeEngine holds archives by image ID; Save writes the one it holds
// (or does what save says), Load records what it was given and then
// holds the image.
type fakeEngine struct {
	mu     sync.Mutex
	held   map[string][]byte
	saves  atomic.Int32
	save   func(w io.Writer, archive []byte) error
	loaded [][]byte
	loadID string // the ID a load makes held
}

func (e *fakeEngine) HasImage(_ context.Context, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.held[id]
	return ok
}

func (e *fakeEngine) SaveImage(_ context.Context, id string, w io.Writer) error {
	e.saves.Add(1)
	e.mu.Lock()
	b, ok := e.held[id]
	e.mu.Unlock()
	if !ok {
		return errors.New("no such image")
	}
	if e.save != nil {
		return e.save(w, b)
	}
	_, err := w.Write(b)
	return err
}

func (e *fakeEngine) LoadImage(_ context.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loaded = append(e.loaded, b)
	e.held[e.loadID] = b
	return nil
}

// checkLoadedOnce checks that e loaded one archive, img's clean one.
func checkLoadedOnce(t *testing.T, e *fakeEngine, img *testImage) {
	t.Helper()
	if len(e.loaded) != 1 {
		t.Fatalf("engine loaded %d archives, want 1", len(e.loaded))
	}
	p := t.TempDir() + "/loaded.tar"
	if err := os.WriteFile(p, e.loaded[0], 0o600); err != nil {
		t.Fatal(err)
	}
	checkClean(t, p, img)
}

type side struct {
	h   host.Host
	eng *fakeEngine
	svc *Service
}

func newSide(t *testing.T, stall time.Duration) *side {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	eng := &fakeEngine{held: map[string][]byte{}}
	return &side{h: h, eng: eng, svc: New(h, eng, Options{Dir: t.TempDir(), Stall: stall})}
}

func connect(t *testing.T, a, b *side) {
	t.Helper()
	if err := a.h.Connect(context.Background(), peer.AddrInfo{ID: b.h.ID(), Addrs: b.h.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

func TestFetch(t *testing.T) {
	layerA, layerB := "layer one: bin/sh", "layer two: etc/motd"
	type holder struct {
		holds  bool
		save   func(w io.Writer, archive []byte) error
		damage bool // a layer's bytes changed on the holder
	}
	good := holder{holds: true}
	tests := []struct {
		name    string
		holders []holder
		stall   time.Duration
		wantErr []string // all in the error; none: the fetch succeeds
	}{
		{name: "from the one holder", holders: []holder{good}},
		{name: "first fails, second sends", holders: []holder{{holds: false}, good}},
		{name: "holder's engine fails, naming the layer", holders: []holder{{holds: true, save: func(w io.Writer, b []byte) error {
			w.Write(b[:100])
			return errors.New("podman save: reading blob sha256:1d3b: file integrity checksum failed for \"./etc/motd\"")
		}}}, wantErr: []string{"it said: podman save: reading blob sha256:1d3b: file integrity checksum failed"}},
		{name: "damaged layer sent", holders: []holder{{holds: true, damage: true}},
			wantErr: []string{"layer " + digest([]byte(layerB)) + " (2 of 2) is damaged"}},
		{name: "holder stalls", stall: 300 * time.Millisecond, holders: []holder{{holds: true, save: func(w io.Writer, b []byte) error {
			w.Write(b[:1000])
			time.Sleep(3 * time.Second)
			return nil
		}}}, wantErr: []string{"no progress for 300ms after 1000 bytes"}},
		{name: "nobody holds it", holders: []holder{{holds: false}}, wantErr: []string{"does not hold"}},
		{name: "no holders", wantErr: []string{"no peer is known to hold it and \"\" names no registry"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stall := tc.stall
			if stall == 0 {
				stall = 10 * time.Second
			}
			b := newSide(t, stall)
			img := newTestImage(layerA, layerB)
			b.eng.loadID = img.id
			var peers []peer.ID
			for _, hd := range tc.holders {
				a := newSide(t, stall)
				connect(t, b, a)
				peers = append(peers, a.h.ID())
				if hd.holds {
					src := img
					if hd.damage {
						src = newTestImage(layerA, layerB)
						src.entries[1].body = []byte("layer two: etc/mot!")
					}
					a.eng.held[img.id] = src.tar(t)
					a.eng.save = hd.save
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := b.svc.Fetch(ctx, img.id, "", peers)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				checkLoadedOnce(t, b.eng, img)
				return
			}
			if err == nil {
				t.Fatal("fetch succeeded")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if len(b.eng.loaded) != 0 {
				t.Error("engine loaded an archive from a failed fetch")
			}
			if ents, _ := os.ReadDir(b.svc.opts.Dir); len(ents) != 0 {
				t.Errorf("%d entries left in the fetch directory", len(ents))
			}
		})
	}
}

// TestFetchShared: fetches of one image at once make one transfer.
func TestFetchShared(t *testing.T) {
	a, b := newSide(t, 10*time.Second), newSide(t, 10*time.Second)
	connect(t, b, a)
	img := newTestImage("a layer")
	release := make(chan struct{})
	a.eng.held[img.id] = img.tar(t)
	a.eng.save = func(w io.Writer, archive []byte) error {
		<-release
		_, err := w.Write(archive)
		return err
	}
	b.eng.loadID = img.id
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.svc.Fetch(context.Background(), img.id, "", []peer.ID{a.h.ID()})
		}()
	}
	waitfor.Cond(t, 10*time.Second, "the holder to start saving", func() bool { return a.eng.saves.Load() == 1 })
	close(release)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := a.eng.saves.Load(); n != 1 {
		t.Errorf("holder saved the image %d times, want 1", n)
	}
	if err := b.svc.Fetch(context.Background(), img.id, "", nil); err != nil {
		t.Errorf("fetch of a held image: %v", err)
	}
}
