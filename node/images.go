package node

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/executor"
)

// The images the node's engine holds are data like task outputs: the
// market asks Config.Holds about them (an image task's offer lists its
// image as an input, by market.ImageManifest), and the advert lists them
// beside the manifests, so managers call holders first, bidders that
// lack the image predict a later start, and a node that must fetch an
// image knows whom to ask (docs/containers.md, "Images in placement").

const (
	// imageRefresh is how often the list is read from the engine when
	// nothing asks sooner (the node pinned an image).
	imageRefresh = time.Minute
	// maxAdvertImages bounds the images an advert lists, out of
	// gossip.MaxHolds: the rest is left to task data.
	maxAdvertImages = 16
)

// imageSet is the engine's images as last read, as manifests.
type imageSet struct {
	mu   sync.Mutex
	held map[string]bool
	list []string // newest first, as the engine lists them
	kick chan struct{}
}

func newImageSet() *imageSet { return &imageSet{held: map[string]bool{}, kick: make(chan struct{}, 1)} }

// holds reports whether the engine held the image named by manifest m.
func (s *imageSet) holds(m string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[m]
}

// recent is up to max of the held images' manifests.
func (s *imageSet) recent(max int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list[:min(len(s.list), max)])
}

func (s *imageSet) set(ids []string) {
	held := make(map[string]bool, len(ids))
	list := make([]string, 0, len(ids))
	for _, id := range ids {
		m := market.ImageManifest(id)
		held[m] = true
		list = append(list, m)
	}
	s.mu.Lock()
	s.held, s.list = held, list
	s.mu.Unlock()
}

// refreshSoon asks imageLoop to read the list again now.
func (s *imageSet) refreshSoon() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// imageLoop keeps n.images current while the node runs; without an
// engine there is nothing to keep.
func (n *Node) imageLoop() {
	e := executor.EngineOf(n.cfg.Runner)
	if e == nil {
		return
	}
	t := time.NewTicker(imageRefresh)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
		ids, err := e.ImageIDs(ctx)
		cancel()
		if err == nil {
			n.images.set(ids)
		} else if n.ctx.Err() == nil {
			log.Warnw("list images", "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.images.kick:
		}
	}
}

// advertHolds are the manifests and images this node's advert lists.
func (n *Node) advertHolds(max int) []string {
	imgs := n.images.recent(min(max, maxAdvertImages))
	return append(imgs, n.data.Store().Recent(max-len(imgs))...)
}

// fetchImage makes the engine hold the image ref names, pinned to ID id:
// from the peers whose adverts list it, then the others closest to it,
// then the registry ref names. An image it fetched counts against
// --image-cache-limit; the least recently used others go beyond it.
func (n *Node) fetchImage(ctx context.Context, ref, id string) error {
	e := executor.EngineOf(n.cfg.Runner)
	if e.HasImage(ctx, id) {
		n.imgCache.Used(id, time.Now())
		return nil
	}
	m := market.ImageManifest(id)
	var holders []peer.ID
	skip := map[peer.ID]bool{}
	for _, mb := range n.Peers() {
		if p := mb.Advert.Peer; p != n.host.ID() && slices.Contains(mb.Advert.Holds, m) {
			holders = append(holders, p)
			skip[p] = true
		}
	}
	holders = append(holders, n.closestPeers(m, -1, skip)...)
	if err := n.imgs.Fetch(ctx, id, ref, holders); err != nil {
		return err
	}
	size, err := e.ImageSize(ctx, id)
	if err != nil {
		log.Warnw("image size", "image", id, "err", err)
	}
	n.imgCache.Added(id, size, time.Now())
	for _, v := range n.imgCache.Victims(map[string]bool{id: true}) {
		if err := e.RemoveImage(ctx, v); err != nil {
			log.Infow("image over --image-cache-limit kept", "image", v, "err", err)
			continue
		}
		n.imgCache.Removed(v)
		log.Infow("image removed to stay under --image-cache-limit", "image", v)
	}
	n.images.refreshSoon()
	return nil
}
