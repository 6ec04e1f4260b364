package gossip

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip/pb"
)

// AdvertVersion is the advert message version this build writes and reads.
const AdvertVersion = 1

// Limits on adverts. A message over any of them is rejected by the
// validator before it reaches the membership view.
const (
	MaxAdvertBytes = 64 << 10
	MaxGPUs        = 64
	MaxDevices     = 64
	MaxLabels      = 64
	MaxLabelLen    = 128
	MaxAddrs       = 32
	MaxSiteLen     = 128
	MaxModelLen    = 128
	// MaxCertLen bounds an advert's certificate chain.
	MaxCertLen      = 16 << 10
	minIntervalMs   = 10
	maxIntervalMs   = 10 * 60 * 1000
	maxAttrsPerDev  = 32
	maxQueueAdverts = 1 << 20
	// MaxReservedGangLen bounds an advert's reserved_gang ("job/task").
	MaxReservedGangLen = 512
	// MaxHolds bounds the manifests an advert lists.
	MaxHolds = 64
	// MaxUsers bounds the users an advert reports usage of, and
	// MaxUserLen a user's name.
	MaxUsers   = 64
	MaxUserLen = 64
	// maxUsage bounds a usage figure: far beyond any network's CPUs.
	maxUsage = 1 << 48
)

// UserUsage is what one limited user's jobs managed by the node hold
// and wait for (market.UserUsage: CPU in millicores, GPUs in
// thousandths).
type UserUsage struct {
	User                                           string
	RunningCPU, RunningGPU, WaitingCPU, WaitingGPU int64
	RunningJobs, WaitingJobs                       int
}

// Advert is a node's resource advertisement in Go form.
type Advert struct {
	Peer          peer.ID
	Boot          uint64
	Seq           uint64
	Time          time.Time
	Site          string
	Labels        map[string]string
	Capacity      resource.Vector
	Free          resource.Vector
	Queue         int
	PredictedWait time.Duration
	Load          float64
	Addrs         []ma.Multiaddr
	Interval      time.Duration
	Leaving       bool
	// Drained says an operator drained the node (agora drain): it
	// takes no work until undrained.
	Drained bool
	// ReservedGang is the gang ("job/task") whose reservation the node
	// honours first, empty when none; Unreserved is then its free room
	// beside every reservation it honours. A manager places replicas of
	// other gangs there only in Unreserved.
	ReservedGang string
	Unreserved   resource.Vector
	// Waiting is the first gang the node is placing that has waited long
	// enough to be a head candidate; HeadRoom when the node will have
	// room for the head it sees (docs/scheduling.md, "The head"). Zero
	// values when none.
	Waiting  WaitingGang
	HeadRoom HeadRoom
	// Cert is the node's certificate chain in a network with an
	// authority (market/auth's encoding), empty otherwise.
	Cert []byte
	// Limits says which task limits the node enforces and whether it
	// runs tasks whose limits it cannot.
	Limits resource.Enforcement
	// Holds lists manifests of task data the node holds whole (hex IDs),
	// and the container images its engine holds (their config digests,
	// in hex), at most MaxHolds: managers call it first for tasks that
	// take them.
	Holds []string
	// Users is, per user with network-wide running limits, what that
	// user's jobs the node manages hold and wait for; at most MaxUsers.
	Users []UserUsage
	// Steal is what the node's queue could give a thief.
	Steal StealOffer
}

// Newer reports whether a is a later advert of the same node than b.
func (a Advert) Newer(b Advert) bool {
	if a.Boot != b.Boot {
		return a.Boot > b.Boot
	}
	return a.Seq > b.Seq
}

// Encode marshals the advert into its versioned protobuf form.
func (a Advert) Encode() ([]byte, error) {
	m := &pb.Advert{
		Version:             AdvertVersion,
		PeerId:              []byte(a.Peer),
		Seq:                 a.Seq,
		Boot:                a.Boot,
		UnixMillis:          a.Time.UnixMilli(),
		Site:                a.Site,
		Labels:              a.Labels,
		Capacity:            VectorToPB(a.Capacity),
		Free:                VectorToPB(a.Free),
		Queue:               uint32(max(a.Queue, 0)),
		PredictedWaitMs:     a.PredictedWait.Milliseconds(),
		Load:                a.Load,
		IntervalMs:          uint64(a.Interval.Milliseconds()),
		Leaving:             a.Leaving,
		Drained:             a.Drained,
		ReservedGang:        a.ReservedGang,
		Cert:                a.Cert,
		UnenforceableLimits: uint32(a.Limits.Missing),
		RunsUnenforced:      a.Limits.Unenforced,
	}
	if a.ReservedGang != "" {
		m.Unreserved = VectorToPB(a.Unreserved)
	}
	m.Waiting, m.HeadRoom = waitingToPB(a.Waiting), headRoomToPB(a.HeadRoom)
	m.Steal = stealToPB(a.Steal)
	for _, u := range a.Users[:min(len(a.Users), MaxUsers)] {
		m.Users = append(m.Users, &pb.UserUsage{User: u.User, RunningCpuMilli: u.RunningCPU, RunningGpuMilli: u.RunningGPU,
			RunningJobs: uint32(max(u.RunningJobs, 0)), WaitingCpuMilli: u.WaitingCPU, WaitingGpuMilli: u.WaitingGPU, WaitingJobs: uint32(max(u.WaitingJobs, 0))})
	}
	for _, ad := range a.Addrs {
		m.Addrs = append(m.Addrs, ad.Bytes())
	}
	for _, h := range a.Holds[:min(len(a.Holds), MaxHolds)] {
		if b, err := hex.DecodeString(h); err == nil && len(b) == sha256.Size {
			m.Holds = append(m.Holds, b)
		}
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("gossip: encode advert: %w", err)
	}
	if len(b) > MaxAdvertBytes {
		return nil, fmt.Errorf("gossip: advert is %d bytes, over the %d-byte limit", len(b), MaxAdvertBytes)
	}
	return b, nil
}

// DecodeAdvert parses and validates an advert. Every violation is an error
// naming the offending field; the caller drops the message.
func DecodeAdvert(b []byte) (Advert, error) {
	if len(b) > MaxAdvertBytes {
		return Advert{}, fmt.Errorf("gossip: advert is %d bytes, over the %d-byte limit", len(b), MaxAdvertBytes)
	}
	var m pb.Advert
	if err := proto.Unmarshal(b, &m); err != nil {
		return Advert{}, fmt.Errorf("gossip: malformed advert: %w", err)
	}
	if m.Version != AdvertVersion {
		return Advert{}, fmt.Errorf("gossip: advert version %d, want %d", m.Version, AdvertVersion)
	}
	id, err := peer.IDFromBytes(m.PeerId)
	if err != nil {
		return Advert{}, fmt.Errorf("gossip: advert peer_id: %w", err)
	}
	if err := checkAdvertFields(&m); err != nil {
		return Advert{}, err
	}
	capv, err := VectorFromPB(m.Capacity)
	if err != nil {
		return Advert{}, fmt.Errorf("gossip: advert capacity: %w", err)
	}
	free, err := VectorFromPB(m.Free)
	if err != nil {
		return Advert{}, fmt.Errorf("gossip: advert free: %w", err)
	}
	a := Advert{
		Peer: id, Boot: m.Boot, Seq: m.Seq, Time: time.UnixMilli(m.UnixMillis), Site: m.Site,
		Labels: m.Labels, Capacity: capv, Free: free, Queue: int(m.Queue),
		PredictedWait: time.Duration(m.PredictedWaitMs) * time.Millisecond, Load: m.Load,
		Interval: time.Duration(m.IntervalMs) * time.Millisecond, Leaving: m.Leaving,
		Drained: m.Drained, ReservedGang: m.ReservedGang, Cert: m.Cert,
		// Bits a later version adds mean nothing to this one.
		Limits: resource.Enforcement{Missing: resource.Limits(m.UnenforceableLimits) & resource.AllLimits, Unenforced: m.RunsUnenforced},
	}
	if m.ReservedGang != "" {
		if a.Unreserved, err = VectorFromPB(m.Unreserved); err != nil {
			return Advert{}, fmt.Errorf("gossip: advert unreserved: %w", err)
		}
	}
	if a.Waiting, err = waitingFromPB(m.Waiting); err != nil {
		return Advert{}, err
	}
	if a.HeadRoom, err = headRoomFromPB(m.HeadRoom); err != nil {
		return Advert{}, err
	}
	if a.Steal, err = stealFromPB(m.Steal, m.Queue); err != nil {
		return Advert{}, err
	}
	for i, raw := range m.Addrs {
		addr, err := ma.NewMultiaddrBytes(raw)
		if err != nil {
			return Advert{}, fmt.Errorf("gossip: advert addrs[%d]: %w", i, err)
		}
		a.Addrs = append(a.Addrs, addr)
	}
	for i, u := range m.Users {
		if u.User == "" || len(u.User) > MaxUserLen {
			return Advert{}, fmt.Errorf("gossip: advert users[%d]: user name of %d bytes, want 1..%d", i, len(u.User), MaxUserLen)
		}
		for _, v := range []int64{u.RunningCpuMilli, u.RunningGpuMilli, u.WaitingCpuMilli, u.WaitingGpuMilli, int64(u.RunningJobs), int64(u.WaitingJobs)} {
			if v < 0 || v > maxUsage {
				return Advert{}, fmt.Errorf("gossip: advert users[%d] (%s): a figure outside 0..%d", i, u.User, int64(maxUsage))
			}
		}
		a.Users = append(a.Users, UserUsage{User: u.User, RunningCPU: u.RunningCpuMilli, RunningGPU: u.RunningGpuMilli, RunningJobs: int(u.RunningJobs),
			WaitingCPU: u.WaitingCpuMilli, WaitingGPU: u.WaitingGpuMilli, WaitingJobs: int(u.WaitingJobs)})
	}
	for i, h := range m.Holds {
		if len(h) != sha256.Size {
			return Advert{}, fmt.Errorf("gossip: advert holds[%d]: %d bytes, want %d", i, len(h), sha256.Size)
		}
		a.Holds = append(a.Holds, hex.EncodeToString(h))
	}
	return a, nil
}

func checkAdvertFields(m *pb.Advert) error {
	switch {
	case len(m.Cert) > MaxCertLen:
		return fmt.Errorf("gossip: advert cert longer than %d bytes", MaxCertLen)
	case len(m.Site) > MaxSiteLen:
		return fmt.Errorf("gossip: advert site longer than %d bytes", MaxSiteLen)
	case len(m.Labels) > MaxLabels:
		return fmt.Errorf("gossip: advert has %d labels, limit %d", len(m.Labels), MaxLabels)
	case len(m.Holds) > MaxHolds:
		return fmt.Errorf("gossip: advert holds %d manifests, limit %d", len(m.Holds), MaxHolds)
	case len(m.Users) > MaxUsers:
		return fmt.Errorf("gossip: advert reports %d users, limit %d", len(m.Users), MaxUsers)
	case len(m.Addrs) > MaxAddrs:
		return fmt.Errorf("gossip: advert has %d addrs, limit %d", len(m.Addrs), MaxAddrs)
	case m.IntervalMs < minIntervalMs || m.IntervalMs > maxIntervalMs:
		return fmt.Errorf("gossip: advert interval_ms %d outside %d..%d", m.IntervalMs, minIntervalMs, maxIntervalMs)
	case m.PredictedWaitMs < 0:
		return fmt.Errorf("gossip: advert predicted_wait_ms %d is negative", m.PredictedWaitMs)
	case math.IsNaN(m.Load) || m.Load < 0 || m.Load > 1:
		return fmt.Errorf("gossip: advert load %v outside 0..1", m.Load)
	case m.Queue > maxQueueAdverts:
		return fmt.Errorf("gossip: advert queue %d over %d", m.Queue, maxQueueAdverts)
	case m.Capacity == nil || m.Free == nil:
		return fmt.Errorf("gossip: advert lacks capacity or free")
	case len(m.ReservedGang) > MaxReservedGangLen:
		return fmt.Errorf("gossip: advert reserved_gang longer than %d bytes", MaxReservedGangLen)
	case m.ReservedGang != "" && m.Unreserved == nil:
		return fmt.Errorf("gossip: advert names reserved_gang %q without unreserved", m.ReservedGang)
	}
	for k, v := range m.Labels {
		if k == "" || len(k) > MaxLabelLen || len(v) > MaxLabelLen {
			return fmt.Errorf("gossip: advert label %q: key empty or key/value over %d bytes", k, MaxLabelLen)
		}
	}
	return nil
}

// VectorToPB converts a resource vector to its wire form.
func VectorToPB(v resource.Vector) *pb.Resources {
	r := &pb.Resources{CpuMilli: v.CPU, Memory: v.Memory, Disk: v.Disk}
	for _, g := range v.GPUs {
		r.Gpus = append(r.Gpus, &pb.GPU{Index: uint32(g.Index), Uuid: g.UUID, Model: g.Model, Memory: g.Memory, Compute: g.Compute, FreeMilli: g.Free})
	}
	for _, d := range v.Devices {
		r.Devices = append(r.Devices, &pb.Device{Kind: d.Kind, Model: d.Model, Count: uint32(max(d.Count, 0)), Attributes: d.Attributes})
	}
	return r
}

// VectorFromPB converts and validates a wire resource vector.
func VectorFromPB(r *pb.Resources) (resource.Vector, error) {
	if r == nil {
		return resource.Vector{}, fmt.Errorf("missing")
	}
	if r.CpuMilli < 0 || r.Memory < 0 || r.Disk < 0 {
		return resource.Vector{}, fmt.Errorf("negative cpu, memory or disk")
	}
	if len(r.Gpus) > MaxGPUs || len(r.Devices) > MaxDevices {
		return resource.Vector{}, fmt.Errorf("over %d gpus or %d devices", MaxGPUs, MaxDevices)
	}
	v := resource.Vector{CPU: r.CpuMilli, Memory: r.Memory, Disk: r.Disk}
	for i, g := range r.Gpus {
		if g.FreeMilli < 0 || g.FreeMilli > resource.WholeGPU || g.Memory < 0 || len(g.Model) > MaxModelLen {
			return resource.Vector{}, fmt.Errorf("gpus[%d]: free_milli, memory or model out of range", i)
		}
		v.GPUs = append(v.GPUs, resource.GPU{Index: int(g.Index), UUID: g.Uuid, Model: g.Model, Memory: g.Memory, Compute: g.Compute, Free: g.FreeMilli})
	}
	for i, d := range r.Devices {
		if d.Kind == "" || len(d.Kind) > MaxModelLen || len(d.Model) > MaxModelLen || len(d.Attributes) > maxAttrsPerDev {
			return resource.Vector{}, fmt.Errorf("devices[%d]: kind, model or attributes out of range", i)
		}
		v.Devices = append(v.Devices, resource.Device{Kind: d.Kind, Model: d.Model, Count: int(d.Count), Attributes: d.Attributes})
	}
	return v, nil
}
