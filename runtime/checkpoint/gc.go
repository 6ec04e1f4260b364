package checkpoint

import "fmt"

// Missing returns the IDs of the chunks m references that cs lacks, each
// once, in the order of first reference: what to fetch from a replica
// before Restore.
func Missing(m Manifest, cs ChunkStore) ([]string, error) {
	var missing []string
	for _, id := range m.ChunkIDs() {
		has, err := cs.Has(id)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: missing: chunk store: has %s: %w", id, err)
		}
		if !has {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// GC returns the IDs in all that no manifest in keep references, each
// once, in the order of all: the chunks to delete. It is pure. The caller
// lists all, calls GC and deletes with no snapshot or restore of the same
// store in between: a snapshot in progress may rely on a chunk that only
// its own, not yet kept, manifest references.
func GC(keep []Manifest, all []string) []string {
	ref := make(map[string]struct{})
	for _, m := range keep {
		for _, e := range m.Entries {
			for _, id := range e.Chunks {
				ref[id] = struct{}{}
			}
		}
	}
	var drop []string
	for _, id := range all {
		if _, ok := ref[id]; !ok {
			ref[id] = struct{}{} // report each once
			drop = append(drop, id)
		}
	}
	return drop
}
