package checkpoints

import (
	"context"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"

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
	inbound chan struct{} // semaphore of served streams
	collect chan struct{} // asks the sweep for a GC now
}

// New serves the protocol on h from a store in st.
func New(h host.Host, st *store.Store) *Service {
	s := &Service{h: h, cs: NewStore(st), inbound: make(chan struct{}, maxCkInbound), collect: make(chan struct{}, 1)}
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
