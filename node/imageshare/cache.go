package imageshare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Cache records the images this node brought to its engine itself (from
// peers or registries), their sizes and when a task last used them, so
// that the node can remove the least recently used to stay under its
// bound. Images the operator put on the engine are not in it and are
// never removed. It is kept in a JSON file; the node's clock is passed
// in.
type Cache struct {
	mu      sync.Mutex
	path    string
	limit   int64 // bytes; 0: no bound
	entries map[string]CacheEntry
}

// CacheEntry is one image the node fetched.
type CacheEntry struct {
	ID   string    `json:"id"`
	Size int64     `json:"size"`
	Used time.Time `json:"used"`
}

// OpenCache reads the record at path (none yet: empty). A record that
// cannot be read is set aside (path + ".bad") and a new one begun: the
// images stay on the engine, only no longer removed by the bound.
func OpenCache(path string, limit int64) (*Cache, error) {
	c := &Cache{path: path, limit: limit, entries: map[string]CacheEntry{}}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("image cache record: %w", err)
	}
	var list []CacheEntry
	if err := json.Unmarshal(b, &list); err != nil {
		log.Warnw("image cache record unreadable; set aside, begun anew", "file", path, "err", err)
		_ = os.Rename(path, path+".bad")
		return c, nil
	}
	for _, e := range list {
		if validDigest(e.ID) && e.Size >= 0 {
			c.entries[e.ID] = e
		}
	}
	return c, nil
}

// Added records an image the node just brought to its engine.
func (c *Cache) Added(id string, size int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[id] = CacheEntry{ID: id, Size: max(size, 0), Used: now}
	c.save()
}

// Used notes that a task is about to use image id (nothing when the node
// did not fetch it).
func (c *Cache) Used(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok {
		e.Used = now
		c.entries[id] = e
		c.save()
	}
}

// Removed forgets an image the node removed from its engine.
func (c *Cache) Removed(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
	c.save()
}

// Victims are the images to remove, least recently used first, to bring
// the fetched images' total to the bound, never one in keep.
func (c *Cache) Victims(keep map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := make([]CacheEntry, 0, len(c.entries))
	for _, e := range c.entries {
		list = append(list, e)
	}
	return Victims(list, c.limit, keep)
}

// Victims picks, from entries, the least recently used images to remove
// until the rest total at most limit (0: no bound), skipping those in
// keep; ties go by ID, so the choice is the same on every run.
func Victims(entries []CacheEntry, limit int64, keep map[string]bool) []string {
	if limit <= 0 {
		return nil
	}
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b CacheEntry) int {
		if c := a.Used.Compare(b.Used); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var out []string
	for _, e := range sorted {
		if total <= limit {
			break
		}
		if keep[e.ID] {
			continue
		}
		out = append(out, e.ID)
		total -= e.Size
	}
	return out
}

// save writes the record; the caller holds c.mu. A failure is logged:
// the record is a hint for eviction, the images are on the engine.
func (c *Cache) save() {
	list := make([]CacheEntry, 0, len(c.entries))
	for _, e := range c.entries {
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b CacheEntry) int { return cmp.Compare(a.ID, b.ID) })
	b, _ := json.Marshal(list)
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		log.Warnw("save image cache record", "err", err)
		return
	}
	if err := os.Rename(tmp, c.path); err != nil {
		log.Warnw("save image cache record", "err", err)
	}
}
