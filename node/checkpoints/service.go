package checkpoints

import (
	"context"
	"fmt"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/store"
)

var log = logging.Logger("checkpoints")

// Timings of the store's garbage collection.
const (
	// sweepEvery is how often stale manifests and unreferenced chunks are
	// collected.
	sweepEvery = time.Minute
)

// Service serves the checkpoint protocol from a Store and pushes and
// fetches checkpoints to and from peers.
type Service struct {
	h       host.Host
	cs      *Store
	refused func(reason string)
	inbound chan struct{} // semaphore of served streams
	collect chan struct{} // asks the sweep for a GC now

	self peer.ID
	// Bounds of what one peer may make this node keep (maxManifestsFrom,
	// maxChunksFrom).
	maxManifests, maxChunks int

	mu    sync.Mutex
	puts  map[peer.ID]int // chunks each peer put in the current window
	putAt time.Time       // when the window began
}

// Reasons a push is refused, as New's refused counts them.
const (
	RefusedManifests = "manifest_quota" // a peer has too many manifests kept here
	RefusedChunks    = "chunk_quota"    // a peer put too many chunks lately
	RefusedManifest  = "bad_manifest"   // a manifest whose seq is not of its epoch
)

// New serves the protocol on h from a store in st; refused (when not nil)
// counts the pushes refused by reason.
func New(h host.Host, st *store.Store, refused func(reason string)) *Service {
	if refused == nil {
		refused = func(string) {}
	}
	s := &Service{h: h, cs: NewStore(st), refused: refused, inbound: make(chan struct{}, maxCkInbound), collect: make(chan struct{}, 1),
		self: h.ID(), maxManifests: maxManifestsFrom, maxChunks: maxChunksFrom, puts: map[peer.ID]int{}}
	h.SetStreamHandler(Protocol, s.serve)
	return s
}

// Store is the service's checkpoint store.
func (s *Service) Store() *Store { return s.cs }

// Collect asks the sweep for a garbage collection soon, without waiting.
func (s *Service) Collect() {
	select {
	case s.collect <- struct{}{}:
	default:
	}
}

// Sweep drops stale manifests and unreferenced chunks every minute, and
// collects garbage when asked (Collect), until ctx ends. active says
// whether a task replica's key runs on this node (its manifest is kept).
func (s *Service) Sweep(ctx context.Context, active func(key string) bool) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.collect:
			chunks, err := s.cs.GC(time.Now())
			if err != nil {
				log.Warnw("checkpoint gc", "err", err)
			} else {
				log.Debugw("checkpoint gc", "chunks", chunks)
			}
		case now := <-t.C:
			mans, chunks, err := s.cs.Sweep(now, active)
			switch {
			case err != nil:
				log.Warnw("checkpoint sweep", "err", err)
			case mans > 0 || chunks > 0:
				log.Infow("checkpoint sweep", "manifests", mans, "chunks", chunks)
			}
		}
	}
}

// Bounds of what one peer may put here: chunks are kept until the next
// GC finds no manifest using them, so a peer's puts are counted per
// window.
const (
	putWindow     = 10 * time.Minute
	maxChunksFrom = 4096 // 2 GiB of 512 KiB chunks per window
)

// mayPut counts a chunk peer p puts, and says whether p is within its
// bound.
func (s *Service) mayPut(p peer.ID, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.putAt) > putWindow {
		clear(s.puts)
		s.putAt = now
	}
	if s.puts[p] >= s.maxChunks {
		s.refused(RefusedChunks)
		return fmt.Errorf("put: %d chunks from you in %v, over the limit", s.puts[p], putWindow)
	}
	s.puts[p]++
	return nil
}

// Self is this node's peer ID.
func (s *Service) Self() peer.ID { return s.self }
