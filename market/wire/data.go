package wire

import (
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire/pb"
)

// Limits on data references (docs/data.md).
const (
	// MaxInputRefs is the most inputs a TaskSpec places: 64 inputs, of
	// up to 16 replicas each on average.
	MaxInputRefs = 1024
)

func dataRefToPB(d *market.DataRef) *pb.DataRef {
	if d == nil {
		return nil
	}
	return &pb.DataRef{Manifest: d.Manifest, Bytes: d.Bytes, Holders: peersToPB(d.Holders)}
}

func dataRefFromPB(p string, d *pb.DataRef) (*market.DataRef, error) {
	if d == nil {
		return nil, nil
	}
	if len(d.Holders) > market.MaxDataHolders {
		return nil, bad(join(p, "holders"), "%d node IDs, over the limit of %d", len(d.Holders), market.MaxDataHolders)
	}
	holders, err := peersFromPB(join(p, "holders"), d.Holders)
	if err != nil {
		return nil, err
	}
	return &market.DataRef{Manifest: d.Manifest, Bytes: d.Bytes, Holders: holders}, nil
}

func dataRefsToPB(ds []market.DataRef) []*pb.DataRef {
	var out []*pb.DataRef
	for i := range ds {
		out = append(out, dataRefToPB(&ds[i]))
	}
	return out
}

func dataRefsFromPB(p string, ds []*pb.DataRef) ([]market.DataRef, error) {
	if len(ds) > MaxInputRefs {
		return nil, bad(p, "%d entries, over the limit of %d", len(ds), MaxInputRefs)
	}
	var out []market.DataRef
	for i, d := range ds {
		r, err := dataRefFromPB(index(p, i), d)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, bad(index(p, i), "empty")
		}
		out = append(out, *r)
	}
	return out, nil
}

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

func inputsToPB(in []market.InputRef) []*pb.InputRef {
	var out []*pb.InputRef
	for _, r := range in {
		out = append(out, &pb.InputRef{Input: int32(r.Input), Data: dataRefToPB(&r.DataRef), Select: r.Select, Upload: r.Upload, Path: r.Path})
	}
	return out
}

func inputsFromPB(p string, in []*pb.InputRef) ([]market.InputRef, error) {
	if len(in) > MaxInputRefs {
		return nil, bad(p, "%d inputs, over the limit of %d", len(in), MaxInputRefs)
	}
	var out []market.InputRef
	for i, r := range in {
		if r == nil || r.Data == nil {
			return nil, bad(join(index(p, i), "data"), "required")
		}
		d, err := dataRefFromPB(join(index(p, i), "data"), r.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, market.InputRef{Input: int(r.Input), DataRef: *d, Select: r.Select, Upload: r.Upload, Path: r.Path})
	}
	return out, nil
}

func outputsToPB(os []spec.Output) []*pb.Output {
	var out []*pb.Output
	for _, o := range os {
		out = append(out, &pb.Output{Path: o.Path, Max: o.Max})
	}
	return out
}

func outputsFromPB(p string, os []*pb.Output) ([]spec.Output, error) {
	if len(os) > spec.MaxOutputs {
		return nil, bad(p, "%d outputs, over the limit of %d", len(os), spec.MaxOutputs)
	}
	var out []spec.Output
	for i, o := range os {
		if o == nil {
			return nil, bad(index(p, i), "empty")
		}
		out = append(out, spec.Output{Path: o.Path, Max: o.Max})
	}
	return out, nil
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
