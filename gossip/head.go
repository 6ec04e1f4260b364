package gossip

import (
	"fmt"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip/pb"
	"github.com/agora-sched/agora/market/spec"
)

// WaitingGang is, in an advert, the first gang the node places that has
// waited long enough to be a head candidate (docs/scheduling.md, "The
// head"); the zero value when none. The node maps it to and from the
// market's own (WaitingGang): gossip carries adverts and knows
// nothing of the core.
type WaitingGang struct {
	Gang     string // "job/task"
	Size     int
	Request  resource.Request
	Priority int
	Since    time.Time // when its replicas became ready
	Owner    string    // its job's owner, with an authority: the head's order weighs their fair share
}

// HeadRoom is, in an advert, when the node will have room for the head
// it sees (Never: it cannot); the zero value when it sees none.
type HeadRoom struct {
	Gang  string
	At    time.Time
	Never bool
}

// Equal reports whether h and o say the same.
func (h HeadRoom) Equal(o HeadRoom) bool {
	return h.Gang == o.Gang && h.Never == o.Never && h.At.Equal(o.At)
}

// Bounds on a waiting gang's replica request in an advert.
const (
	maxRequestCPU    = 65536000
	maxRequestBytes  = int64(1) << 50
	maxRequestGPUs   = 64
	maxRequestDevs   = 16
	maxRequestDevCnt = 64
	maxLabelValueLen = 256
)

func waitingToPB(w WaitingGang) *pb.WaitingGang {
	if w.Gang == "" {
		return nil
	}
	r := w.Request
	q := &pb.ReplicaRequest{CpuMilli: r.CPU, Memory: r.Memory, Disk: r.Disk, GpuCount: uint32(max(r.GPU.Count, 0)), GpuShareMilli: r.GPU.Share,
		GpuMemory: r.GPU.Memory, GpuModel: r.GPU.Model, Site: r.Site, Labels: r.Labels, Limits: uint32(r.Limits)}
	for _, d := range r.Devices {
		q.Devices = append(q.Devices, &pb.Device{Kind: d.Kind, Model: d.Model, Count: uint32(max(d.Count, 0))})
	}
	return &pb.WaitingGang{Gang: w.Gang, Size: uint32(max(w.Size, 0)), Request: q, Priority: int32(w.Priority), SinceUnixMillis: w.Since.UnixMilli(), Owner: w.Owner}
}

// waitingFromPB checks and converts an advert's waiting gang; every
// violation is an error naming the field.
func waitingFromPB(m *pb.WaitingGang) (WaitingGang, error) {
	if m == nil {
		return WaitingGang{}, nil
	}
	bad := func(f string, args ...any) (WaitingGang, error) {
		return WaitingGang{}, fmt.Errorf("gossip: advert waiting."+f, args...)
	}
	q := m.Request
	switch {
	case m.Gang == "" || len(m.Gang) > MaxReservedGangLen:
		return bad("gang: want 1..%d bytes, got %d", MaxReservedGangLen, len(m.Gang))
	case m.Size < 2 || m.Size > spec.MaxReplicas:
		return bad("size %d outside 2..%d", m.Size, spec.MaxReplicas)
	case m.Priority < spec.MinPriority || m.Priority > spec.MaxPriority:
		return bad("priority %d outside %d..%d", m.Priority, spec.MinPriority, spec.MaxPriority)
	case m.SinceUnixMillis <= 0:
		return bad("since_unix_millis %d: want a time after 1970", m.SinceUnixMillis)
	case len(m.Owner) > MaxUserLen: // proto3 strings are valid UTF-8
		return bad("owner: want at most %d bytes, got %d", MaxUserLen, len(m.Owner))
	case q == nil:
		return bad("request missing")
	case q.CpuMilli < 0 || q.CpuMilli > maxRequestCPU:
		return bad("request.cpu_milli %d outside 0..%d", q.CpuMilli, maxRequestCPU)
	case q.Memory < 0 || q.Memory > maxRequestBytes, q.Disk < 0 || q.Disk > maxRequestBytes, q.GpuMemory < 0 || q.GpuMemory > maxRequestBytes:
		return bad("request: memory, disk and gpu_memory must be 0..2^50 bytes")
	case q.GpuCount > maxRequestGPUs:
		return bad("request.gpu_count %d over %d", q.GpuCount, maxRequestGPUs)
	case q.GpuShareMilli < 0 || q.GpuShareMilli > resource.WholeGPU:
		return bad("request.gpu_share_milli %d outside 0..%d", q.GpuShareMilli, resource.WholeGPU)
	case len(q.GpuModel) > MaxModelLen || len(q.Site) > MaxSiteLen:
		return bad("request: gpu_model and site must be at most %d bytes", MaxModelLen)
	case len(q.Devices) > maxRequestDevs:
		return bad("request.devices: %d, over %d", len(q.Devices), maxRequestDevs)
	case len(q.Labels) > MaxLabels:
		return bad("request.labels: %d, over %d", len(q.Labels), MaxLabels)
	}
	r := resource.Request{CPU: q.CpuMilli, Memory: q.Memory, Disk: q.Disk, Site: q.Site, Labels: q.Labels,
		GPU:    resource.GPURequest{Count: int(q.GpuCount), Share: q.GpuShareMilli, Memory: q.GpuMemory, Model: q.GpuModel},
		Limits: resource.Limits(q.Limits) & resource.AllLimits}
	for i, d := range q.Devices {
		if d.Kind == "" || len(d.Kind) > MaxModelLen || len(d.Model) > MaxModelLen || d.Count < 1 || d.Count > maxRequestDevCnt {
			return bad("request.devices[%d]: want a kind and model of at most %d bytes and a count of 1..%d", i, MaxModelLen, maxRequestDevCnt)
		}
		r.Devices = append(r.Devices, resource.DeviceRequest{Kind: d.Kind, Model: d.Model, Count: int(d.Count)})
	}
	for k, v := range q.Labels {
		if k == "" || len(k) > MaxLabelLen || len(v) > maxLabelValueLen {
			return bad("request.labels: key %q empty or over %d bytes, or its value over %d", k, MaxLabelLen, maxLabelValueLen)
		}
	}
	return WaitingGang{Gang: m.Gang, Size: int(m.Size), Request: r, Priority: int(m.Priority), Since: time.UnixMilli(m.SinceUnixMillis), Owner: m.Owner}, nil
}

func headRoomToPB(h HeadRoom) *pb.HeadRoom {
	if h.Gang == "" {
		return nil
	}
	out := &pb.HeadRoom{Gang: h.Gang, Never: h.Never}
	if !h.Never && !h.At.IsZero() {
		out.AtUnixMillis = max(h.At.UnixMilli(), 1)
	}
	return out
}

func headRoomFromPB(m *pb.HeadRoom) (HeadRoom, error) {
	switch {
	case m == nil:
		return HeadRoom{}, nil
	case m.Gang == "" || len(m.Gang) > MaxReservedGangLen:
		return HeadRoom{}, fmt.Errorf("gossip: advert head_room.gang: want 1..%d bytes, got %d", MaxReservedGangLen, len(m.Gang))
	case m.AtUnixMillis < 0:
		return HeadRoom{}, fmt.Errorf("gossip: advert head_room.at_unix_millis %d is negative", m.AtUnixMillis)
	}
	h := HeadRoom{Gang: m.Gang, Never: m.Never}
	if m.AtUnixMillis > 0 && !m.Never {
		h.At = time.UnixMilli(m.AtUnixMillis)
	}
	return h, nil
}
