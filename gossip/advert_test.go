package gossip

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip/pb"
)

// testPeer is a syntactically valid peer ID for tests.
func testPeer(t testing.TB, s string) peer.ID {
	t.Helper()
	id, err := peer.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

const (
	peerA = "12D3KooWGRYZDHBembyGJQqQ6WgLqJWYNjnECGwGJvd5ZBmDqNpK"
	peerB = "12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq"
)

func sampleAdvert(t testing.TB) Advert {
	gpu := resource.GPU{Index: 0, Model: "A100", Memory: 40 << 30, Free: resource.WholeGPU}
	return Advert{
		Peer: testPeer(t, peerA), Boot: 2, Seq: 7, Time: time.UnixMilli(1700000000000), Site: "lab",
		Labels:   map[string]string{"zone": "a"},
		Capacity: resource.Vector{CPU: 16000, Memory: 64 << 30, Disk: 1 << 40, GPUs: []resource.GPU{gpu}, Devices: []resource.Device{{Kind: "fpga", Model: "u250", Count: 1}}},
		Free:     resource.Vector{CPU: 8000, Memory: 32 << 30, GPUs: []resource.GPU{gpu}},
		Queue:    3, PredictedWait: 1500 * time.Millisecond, Load: 0.25,
		Addrs:    []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/4001")},
		Interval: 2 * time.Second,
		Limits:   resource.Enforcement{Missing: resource.LimitPids, Unenforced: true},
		Holds:    []string{strings.Repeat("ab", 32), strings.Repeat("01", 32)},
		Waiting: WaitingGang{Gang: "job-9/train", Size: 64, Priority: 3, Since: time.UnixMilli(1699999990000), Owner: "alice",
			Request: resource.Request{CPU: 4000, Memory: 16 << 30, GPU: resource.GPURequest{Count: 2, Model: "A100"}, Site: "lab",
				Labels: map[string]string{"rack": "r1"}, Devices: []resource.DeviceRequest{{Kind: "fpga", Count: 1}}, Limits: resource.LimitCPU}},
		HeadRoom: HeadRoom{Gang: "job-9/train", At: time.UnixMilli(1700000600000)},
		Users:    []UserUsage{{User: "alice", RunningCPU: 2000, RunningGPU: 500, RunningJobs: 2, WaitingCPU: 1000, WaitingJobs: 1}},
		Steal:    StealOffer{Known: true, Count: 2, CPU: 500, Memory: 1 << 30, GPUs: 1, Runtime: 90 * time.Second},
	}
}

func TestAdvertRoundTrip(t *testing.T) {
	a := sampleAdvert(t)
	b, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeAdvert(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Peer != a.Peer || got.Seq != a.Seq || got.Boot != a.Boot || got.Site != a.Site || got.Queue != a.Queue ||
		got.PredictedWait != a.PredictedWait || got.Interval != a.Interval || got.Load != a.Load || !got.Time.Equal(a.Time) ||
		got.Limits != a.Limits || strings.Join(got.Holds, ",") != strings.Join(a.Holds, ",") {
		t.Fatalf("scalar fields differ:\n got %+v\nwant %+v", got, a)
	}
	if got.Capacity.String() != a.Capacity.String() || got.Free.CPU != a.Free.CPU || got.Capacity.GPUs[0] != a.Capacity.GPUs[0] {
		t.Fatalf("vectors differ: %v / %v", got.Capacity, a.Capacity)
	}
	if !slices.Equal(got.Users, a.Users) {
		t.Fatalf("users %+v, want %+v", got.Users, a.Users)
	}
	if len(got.Addrs) != 1 || !got.Addrs[0].Equal(a.Addrs[0]) || got.Labels["zone"] != "a" {
		t.Fatalf("addrs or labels differ: %v %v", got.Addrs, got.Labels)
	}
	if w, g := a.Waiting, got.Waiting; g.Gang != w.Gang || g.Size != w.Size || g.Priority != w.Priority || !g.Since.Equal(w.Since) ||
		fmt.Sprint(g.Request) != fmt.Sprint(w.Request) || g.Request.Limits != w.Request.Limits {
		t.Fatalf("waiting gang:\n got %+v\nwant %+v", g, w)
	}
	if !got.HeadRoom.Equal(a.HeadRoom) {
		t.Fatalf("head room: got %+v, want %+v", got.HeadRoom, a.HeadRoom)
	}
	if got.Steal != a.Steal {
		t.Fatalf("steal offer: got %+v, want %+v", got.Steal, a.Steal)
	}
	for _, o := range []StealOffer{{Known: true}, {}} { // nothing to give; a sender that does not say
		a.Steal = o
		if b, err = a.Encode(); err != nil {
			t.Fatal(err)
		}
		if got, err = DecodeAdvert(b); err != nil || got.Steal != o {
			t.Fatalf("steal offer %+v: decoded %+v, %v", o, got.Steal, err)
		}
	}
	for _, h := range []HeadRoom{{Gang: "j/t"}, {Gang: "j/t", Never: true}, {}} {
		a.HeadRoom = h
		if b, err = a.Encode(); err != nil {
			t.Fatal(err)
		}
		if got, err = DecodeAdvert(b); err != nil || !got.HeadRoom.Equal(h) {
			t.Fatalf("head room %+v: decoded %+v, %v", h, got.HeadRoom, err)
		}
	}
	if got.ReservedGang != "" || got.Unreserved.CPU != 0 {
		t.Fatalf("no reservation advertised, decoded %q %v", got.ReservedGang, got.Unreserved)
	}
	a.ReservedGang, a.Unreserved = "job-1/train", resource.Vector{CPU: 2000, Memory: 8 << 30}
	if b, err = a.Encode(); err != nil {
		t.Fatal(err)
	}
	if got, err = DecodeAdvert(b); err != nil {
		t.Fatal(err)
	}
	if got.ReservedGang != a.ReservedGang || got.Unreserved.CPU != 2000 || got.Unreserved.Memory != 8<<30 {
		t.Fatalf("reservation: got %q %v, want %q %v", got.ReservedGang, got.Unreserved, a.ReservedGang, a.Unreserved)
	}
}

func TestDecodeAdvertRejects(t *testing.T) {
	good := func() *pb.Advert {
		b, err := sampleAdvert(t).Encode()
		if err != nil {
			t.Fatal(err)
		}
		var m pb.Advert
		if err := proto.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	cases := []struct {
		name   string
		mutate func(m *pb.Advert)
		raw    []byte
		want   string
	}{
		{name: "garbage", raw: []byte{0xff, 0xff, 0xff}, want: "malformed"},
		{name: "oversized", raw: make([]byte, MaxAdvertBytes+1), want: "limit"},
		{name: "version", mutate: func(m *pb.Advert) { m.Version = 2 }, want: "version 2"},
		{name: "peer id", mutate: func(m *pb.Advert) { m.PeerId = []byte("nope") }, want: "peer_id"},
		{name: "interval", mutate: func(m *pb.Advert) { m.IntervalMs = 0 }, want: "interval_ms"},
		{name: "load", mutate: func(m *pb.Advert) { m.Load = 3 }, want: "load"},
		{name: "negative cpu", mutate: func(m *pb.Advert) { m.Free.CpuMilli = -1 }, want: "negative"},
		{name: "gpu share", mutate: func(m *pb.Advert) { m.Capacity.Gpus[0].FreeMilli = 2000 }, want: "gpus[0]"},
		{name: "no capacity", mutate: func(m *pb.Advert) { m.Capacity = nil }, want: "capacity"},
		{name: "bad addr", mutate: func(m *pb.Advert) { m.Addrs = [][]byte{{0x99, 0x99}} }, want: "addrs[0]"},
		{name: "empty label key", mutate: func(m *pb.Advert) { m.Labels = map[string]string{"": "x"} }, want: "label"},
		{name: "device kind", mutate: func(m *pb.Advert) { m.Capacity.Devices[0].Kind = "" }, want: "devices[0]"},
		{name: "reserved gang without room", mutate: func(m *pb.Advert) { m.ReservedGang = "j/t" }, want: "without unreserved"},
		{name: "user usage without a user", mutate: func(m *pb.Advert) { m.Users[0].User = "" }, want: "users[0]"},
		{name: "negative user usage", mutate: func(m *pb.Advert) { m.Users[0].RunningCpuMilli = -1 }, want: "users[0] (alice)"},
		{name: "too many users", mutate: func(m *pb.Advert) {
			for range MaxUsers {
				m.Users = append(m.Users, m.Users[0])
			}
		}, want: "users"},
		{name: "reserved gang too long", mutate: func(m *pb.Advert) {
			m.ReservedGang, m.Unreserved = strings.Repeat("g", MaxReservedGangLen+1), m.Free
		}, want: "reserved_gang longer"},
		{name: "waiting gang of one", mutate: func(m *pb.Advert) { m.Waiting.Size = 1 }, want: "waiting.size 1"},
		{name: "waiting gang unnamed", mutate: func(m *pb.Advert) { m.Waiting.Gang = "" }, want: "waiting.gang"},
		{name: "waiting priority", mutate: func(m *pb.Advert) { m.Waiting.Priority = 11 }, want: "waiting.priority"},
		{name: "waiting owner too long", mutate: func(m *pb.Advert) { m.Waiting.Owner = strings.Repeat("u", MaxUserLen+1) }, want: "waiting.owner"},
		{name: "waiting since", mutate: func(m *pb.Advert) { m.Waiting.SinceUnixMillis = 0 }, want: "since_unix_millis"},
		{name: "waiting without request", mutate: func(m *pb.Advert) { m.Waiting.Request = nil }, want: "request missing"},
		{name: "waiting cpu", mutate: func(m *pb.Advert) { m.Waiting.Request.CpuMilli = -1 }, want: "request.cpu_milli"},
		{name: "waiting gpu share", mutate: func(m *pb.Advert) { m.Waiting.Request.GpuShareMilli = 1001 }, want: "gpu_share_milli"},
		{name: "waiting device count", mutate: func(m *pb.Advert) { m.Waiting.Request.Devices[0].Count = 0 }, want: "request.devices[0]"},
		{name: "head room unnamed", mutate: func(m *pb.Advert) { m.HeadRoom.Gang = "" }, want: "head_room.gang"},
		{name: "head room negative", mutate: func(m *pb.Advert) { m.HeadRoom.AtUnixMillis = -3 }, want: "head_room.at_unix_millis"},
		{name: "steal count over queue", mutate: func(m *pb.Advert) { m.Steal.Count = m.Queue + 1 }, want: "steal.count"},
		{name: "steal cpu", mutate: func(m *pb.Advert) { m.Steal.CpuMilli = -1 }, want: "steal.cpu_milli"},
		{name: "steal memory", mutate: func(m *pb.Advert) { m.Steal.Memory = 1 << 51 }, want: "steal.memory"},
		{name: "steal gpus", mutate: func(m *pb.Advert) { m.Steal.Gpus = 65 }, want: "steal.gpus"},
		{name: "steal runtime", mutate: func(m *pb.Advert) { m.Steal.RuntimeMs = -1 }, want: "steal.runtime_ms"},
		{name: "negative unreserved", mutate: func(m *pb.Advert) {
			m.ReservedGang, m.Unreserved = "j/t", &pb.Resources{CpuMilli: -5}
		}, want: "unreserved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := c.raw
			if c.mutate != nil {
				m := good()
				c.mutate(m)
				var err error
				if raw, err = proto.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			_, err := DecodeAdvert(raw)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodeAdvert error = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestLargeChange(t *testing.T) {
	base := sampleAdvert(t)
	cases := []struct {
		name   string
		mutate func(a *Advert)
		want   bool
	}{
		{"same", func(a *Advert) {}, false},
		{"small cpu move", func(a *Advert) { a.Free.CPU -= 1000 }, false},
		{"large cpu move", func(a *Advert) { a.Free.CPU -= 2000 }, true},
		{"gang reservation taken", func(a *Advert) { a.ReservedGang = "j/t" }, true},
		{"large memory move", func(a *Advert) { a.Free.Memory -= 8 << 30 }, true},
		{"gpu taken", func(a *Advert) { a.Free.GPUs = []resource.GPU{{Index: 0, Free: 0}} }, true},
		{"queue", func(a *Advert) { a.Queue++ }, true},
		{"capacity", func(a *Advert) { a.Capacity.CPU = 1000 }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := base
			cur.Free = base.Free.Clone()
			cur.Capacity = base.Capacity.Clone()
			c.mutate(&cur)
			if got := LargeChange(base, cur); got != c.want {
				t.Fatalf("LargeChange = %v, want %v", got, c.want)
			}
		})
	}
}
