package wire

import (
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
)

// Limits on data references (docs/data.md).
const (
	// MaxInputRefs is the most inputs a TaskSpec places: 64 inputs, of
	// up to 16 replicas each on average.
	MaxInputRefs = 1024
)

// checkDataRefs checks an offer's inputs.
func checkDataRefs(p string, ds []market.DataRef) error {
	if len(ds) > MaxInputRefs {
		return bad(p, "%d entries, over the limit of %d", len(ds), MaxInputRefs)
	}
	for i := range ds {
		if err := checkDataRef(index(p, i), &ds[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkDataRef checks a data reference (nil: none).
func checkDataRef(p string, d *market.DataRef) error {
	if d == nil {
		return nil
	}
	if !spec.ValidDataID(d.Manifest) {
		return bad(join(p, "manifest"), "not a manifest ID (64 lowercase hex digits)")
	}
	if d.Bytes < 0 {
		return bad(join(p, "bytes"), "negative")
	}
	if len(d.Holders) > market.MaxDataHolders {
		return bad(join(p, "holders"), "%d node IDs, over the limit of %d", len(d.Holders), market.MaxDataHolders)
	}
	return checkPeers(join(p, "holders"), d.Holders)
}

// checkInputs checks the inputs of a task spec.
func checkInputs(p string, in []market.InputRef) error {
	if len(in) > MaxInputRefs {
		return bad(p, "%d inputs, over the limit of %d", len(in), MaxInputRefs)
	}
	for i, r := range in {
		ip := index(p, i)
		if r.Input < 0 || r.Input >= spec.MaxInputs {
			return bad(join(ip, "input"), "%d out of range 0..%d", r.Input, spec.MaxInputs-1)
		}
		if err := checkDataRef(join(ip, "data"), &r.DataRef); err != nil {
			return err
		}
		if r.Select != "" {
			if why := spec.RelPath(r.Select, false); why != "" {
				return bad(join(ip, "select"), "%s", why)
			}
		}
		if why := spec.RelPath(r.Path, true); why != "" {
			return bad(join(ip, "path"), "%s", why)
		}
	}
	return nil
}

// checkOutputs checks the outputs of a task spec.
func checkOutputs(p string, os []spec.Output) error {
	if len(os) > spec.MaxOutputs {
		return bad(p, "%d outputs, over the limit of %d", len(os), spec.MaxOutputs)
	}
	for i, o := range os {
		if why := spec.RelPath(o.Path, false); why != "" {
			return bad(join(index(p, i), "path"), "%s", why)
		}
		if o.Max < 0 || o.Max > spec.MaxOutputBytes {
			return bad(join(index(p, i), "max"), "%d out of range 0..%d", o.Max, int64(spec.MaxOutputBytes))
		}
	}
	return nil
}

// checkPeers checks a gang's peer list: at most MaxPeers node IDs, each
// valid.
func checkPeers(p string, peers []market.NodeID) error {
	if len(peers) > MaxPeers {
		return bad(p, "%d node IDs, over the limit of %d", len(peers), MaxPeers)
	}
	for i, id := range peers {
		if err := checkNodeID(index(p, i), id); err != nil {
			return err
		}
	}
	return nil
}
