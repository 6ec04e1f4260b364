package wire

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire/pb"
)

const (
	manager = market.NodeID("12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo")
	bidder  = market.NodeID("12D3KooWSoLzrDhXbxRG2vStgGjq4ZAyxYGdd3iCKBRuP9mK4VtA")
)

var (
	t0  = time.Unix(1_760_000_000, 123_456_789).UTC()
	key = market.TaskKey{Job: "01J9Z3K7Q8-train", Task: "train.step-1", Replica: 3}
	aid = market.AuctionID{Key: key, Epoch: 7, Round: 2}
)

// fullOffer is a task offer with every field set.
func fullOffer() market.TaskOffer {
	return market.TaskOffer{
		Key: key, GangSize: 4, Pack: true, Type: "pytorch/resnet", Priority: 8,
		Deadline: t0.Add(6 * time.Hour), Estimate: 90 * time.Minute,
		Request: resource.Request{
			CPU: 4500, Memory: 16 << 30, Disk: 100 << 30,
			GPU: resource.GPURequest{Count: 2, Memory: 40 << 30, Model: "A100"},
			Devices: []resource.DeviceRequest{
				{Kind: "fpga", Model: "u250", Count: 1},
				{Kind: "npu", Count: 4},
			},
			Labels: map[string]string{"zone": "eu-west", "agora.io/pool": "gpu ✓"},
			Site:   "lab-α",
			Limits: resource.LimitCPU | resource.LimitMemory,
		},
		Inputs: []market.DataRef{{Manifest: strings.Repeat("c3", 32), Bytes: 50 << 20}, {Manifest: strings.Repeat("d4", 32)}},
	}
}

// shareOffer asks for a GPU share and nothing optional.
func shareOffer() market.TaskOffer {
	return market.TaskOffer{
		Key:      market.TaskKey{Job: "j", Task: "t", Replica: 0},
		Priority: 0,
		Request:  resource.Request{CPU: 250, Memory: 1 << 20, GPU: resource.GPURequest{Share: 250}},
	}
}

func fullSpec() market.TaskSpec {
	return market.TaskSpec{
		TaskOffer:          fullOffer(),
		Command:            []string{"python3", "-m", "train", "--lr=0.1", "", "ünïcode"},
		Env:                map[string]string{"EPOCHS": "10", "DATA_DIR": "/data/set a", "EMPTY": ""},
		Timeout:            12 * time.Hour,
		CheckpointInterval: 5 * time.Minute,
		Epoch:              7,
		Attempt:            2,
		Rank:               3,
		Peers:              gangPeers(),
		Owner:              "alice",
		Previous:           []market.Placement{{Epoch: 5, Node: "n3"}, {Epoch: 6, Node: bidder}},
		Inputs: []market.InputRef{
			{Input: 0, DataRef: market.DataRef{Manifest: strings.Repeat("0f", 32), Bytes: 10 << 20, Holders: []market.NodeID{"n3", bidder}}, Select: "out.bin", Path: "in/out.bin"},
			{Input: 1, DataRef: market.DataRef{Manifest: strings.Repeat("a1", 32)}, Upload: true, Path: "."},
		},
		Outputs: []spec.Output{{Path: "out.bin"}, {Path: "res/dir", Max: 1 << 30}},
		Image:   "localhost/train:v3",
		ImageID: "sha256:" + strings.Repeat("5e", 32),
	}
}

// ticket is a stand-in for a job's ticket: the wire carries its bytes,
// the market reads them.
var ticket = []byte{0xAE, 1, 2, 3}

// gangPeers is the node list of a four-replica packed gang, in rank
// order: two replicas share the bidder.
func gangPeers() []market.NodeID {
	return []market.NodeID{manager, bidder, "n3", bidder}
}

func fullBid() market.Bid {
	return market.Bid{
		Auction: aid, Bidder: bidder, Score: 0.8125,
		Start: t0.Add(time.Second), Finish: t0.Add(91 * time.Minute),
		Runtime: 90 * time.Minute, Preempt: true, Slots: 2,
	}
}

// fullAward is an award with every field set: the manager's only bid.
func fullAward() market.Award {
	return market.Award{Auction: aid, Manager: manager, Task: fullSpec(), Bid: fullBid(), Last: true, Ticket: ticket, Direct: true}
}

func fullHold() market.Hold {
	return market.Hold{Auction: aid, Manager: manager, Task: fullSpec(), Expires: t0.Add(30 * time.Second), Ticket: ticket}
}

func fullReserve() market.Reserve {
	return market.Reserve{Auction: aid, Manager: manager, Request: fullOffer().Request, Priority: 8, Until: t0.Add(time.Minute), Since: t0.Add(-time.Hour)}
}

func fullSteal() market.StealRequest {
	return market.StealRequest{Thief: bidder, Room: fullOffer().Request, Max: 3, EndsBy: t0.Add(time.Hour)}
}

func fullTransfer() market.Transfer {
	return market.Transfer{Key: key, Epoch: 7, From: bidder, To: "12D3KooWThief.node_2-b"}
}

// roundTrips lists one or more messages of every kind.
func roundTrips() []struct {
	name string
	msg  market.Msg
} {
	return []struct {
		name string
		msg  market.Msg
	}{
		{"cfp full", market.CFP{Auction: aid, Manager: manager, Task: fullOffer(), Ticket: ticket}},
		{"cfp gpu share, zero deadline", market.CFP{Auction: market.AuctionID{Key: shareOffer().Key}, Manager: "n1", Task: shareOffer()}},
		{"bid full", fullBid()},
		{"bid zero times, negative score", market.Bid{Auction: aid, Bidder: bidder, Score: -1.5}},
		{"nobid", market.NoBid{Auction: aid, Bidder: bidder, Reason: "gpu memory: want 40GiB per GPU, largest 24GiB", Permanent: true, NeedTicket: true}},
		{"nobid busy", market.NoBid{Auction: aid, Bidder: bidder}},
		{"award full", fullAward()},
		{"award minimal spec", market.Award{Auction: aid, Manager: manager,
			Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"true"}, Epoch: math.MaxUint64},
			Bid:  market.Bid{Auction: aid, Bidder: bidder}}},
		{"award reply accept", market.AwardReply{Auction: aid, Bidder: bidder, Accept: true}},
		{"award reply decline", market.AwardReply{Auction: aid, Bidder: bidder, Reason: "state changed: would start 2s later than bid"}},
		{"task status full", market.TaskStatus{Key: key, Epoch: 7, Attempt: 2, Node: bidder, State: market.TaskFailed,
			ExitCode: -1, Reason: "killed: out of memory\nlast line", Time: t0, Runtime: 42*time.Minute + 17, AckWanted: true}},
		{"task status running zero time", market.TaskStatus{Key: key, Epoch: 1, Attempt: 1, Node: bidder, State: market.TaskRunning}},
		{"task status exit 255", market.TaskStatus{Key: key, Node: bidder, State: market.TaskSucceeded, ExitCode: 255, Time: t0}},
		{"task status with outputs", market.TaskStatus{Key: key, Node: bidder, State: market.TaskSucceeded, Time: t0,
			Outputs: &market.DataRef{Manifest: strings.Repeat("be", 32), Bytes: 1, Holders: []market.NodeID{bidder, "n3"}}}},
		{"task status final, ack wanted", market.TaskStatus{Key: key, Epoch: 3, Attempt: 1, Node: bidder, State: market.TaskPreempted, Time: t0, AckWanted: true}},
		{"result ack", market.ResultAck{Key: key, Epoch: 3, Attempt: 1}},
		{"result ack zero", market.ResultAck{Key: key}},
		{"cancel", market.CancelTask{Key: key, Epoch: 7, Reason: "cancelled by user"}},
		{"cancel no reason", market.CancelTask{Key: key}},
		{"bid gang slots", market.Bid{Auction: aid, Bidder: bidder, Score: 0.5, Slots: MaxSlots}},
		{"hold full", fullHold()},
		{"hold minimal spec", market.Hold{Auction: aid, Manager: manager,
			Task:    market.TaskSpec{TaskOffer: market.TaskOffer{Key: key, GangSize: 2}, Command: []string{"true"}},
			Expires: t0}},
		{"hold reply ok", market.HoldReply{Auction: aid, Bidder: bidder, Replica: 3, OK: true}},
		{"hold reply refused", market.HoldReply{Auction: aid, Bidder: bidder, Reason: "resources taken since the bid"}},
		{"commit full", market.Commit{Key: key, Epoch: 7, Rank: 3, Peers: gangPeers()}},
		{"commit rank 0 no peers", market.Commit{Key: key}},
		{"release", market.Release{Key: key, Epoch: 7}},
		{"release epoch 0", market.Release{Key: key}},
		{"reserve full", fullReserve()},
		{"reserve cancel", market.Reserve{Auction: aid, Manager: manager}},
		{"steal request full", fullSteal()},
		{"steal request zero room", market.StealRequest{Thief: bidder, Max: 1}},
		{"steal request gpu share, most tasks", market.StealRequest{Thief: bidder, Room: shareOffer().Request, Max: MaxStealTasks}},
		{"transfer full", fullTransfer()},
		{"transfer epoch 0", market.Transfer{Key: key, From: bidder, To: manager}},
		{"manager query", market.ManagerQuery{Job: key.Job, From: bidder}},
		{"manager answer yes", market.ManagerAnswer{Job: key.Job, From: manager, Manages: true}},
		{"manager answer no", market.ManagerAnswer{Job: key.Job, From: manager}},
		{"manager answer successor", market.ManagerAnswer{Job: key.Job, From: manager, Successor: bidder}},
		{"manager claim", market.ManagerClaim{Job: key.Job, From: manager, Rank: market.ClaimRank{State: market.JobRunning, Succeeded: 3, Running: 2, TakenFrom: bidder}}},
		{"manager claim reply", market.ManagerClaim{Job: key.Job, From: bidder, Rank: market.ClaimRank{State: market.JobSucceeded, Succeeded: 1000}, Reply: true}},
	}
}

// numKinds is how many market message kinds the wire carries.
const numKinds = 18

func TestRoundTrip(t *testing.T) {
	kinds := map[string]bool{}
	for _, tc := range roundTrips() {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.msg)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if reflect.TypeOf(got) != reflect.TypeOf(tc.msg) {
				t.Fatalf("Decode type %T, want %T", got, tc.msg)
			}
			if !reflect.DeepEqual(got, tc.msg) {
				t.Fatalf("round trip mismatch\n got %#v\nwant %#v", got, tc.msg)
			}
			again, err := Encode(got)
			if err != nil || string(again) != string(b) {
				t.Fatalf("re-encoding differs (err %v)", err)
			}
		})
		kinds[market.Kind(tc.msg)] = true
	}
	if len(kinds) != numKinds {
		t.Errorf("round trips cover %d message kinds, want %d", len(kinds), numKinds)
	}
}

// TestDecodeStepTypes checks that decoded messages hit the cases of the
// market's Step switch: values, not pointers.
func TestDecodeStepTypes(t *testing.T) {
	for _, tc := range roundTrips() {
		b, err := Encode(tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		switch m.(type) {
		case market.CFP, market.Bid, market.NoBid, market.Award, market.AwardReply, market.TaskStatus, market.CancelTask,
			market.ResultAck, market.Hold, market.HoldReply, market.Commit, market.Release, market.Reserve,
			market.StealRequest, market.Transfer, market.ManagerQuery, market.ManagerAnswer, market.ManagerClaim:
		default:
			t.Errorf("%s: Decode returned %T", tc.name, m)
		}
	}
}

// TestDecodeTimesUTC checks that a time in another zone comes back as the
// same instant in UTC, and that the zero time stays zero.
func TestDecodeTimesUTC(t *testing.T) {
	local := time.Unix(1_700_000_000, 5).In(time.FixedZone("X", 3600))
	b, err := Encode(market.TaskStatus{Key: key, Node: bidder, State: market.TaskRunning, Time: local})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	got := m.(market.TaskStatus).Time
	if !got.Equal(local) || got.Location() != time.UTC {
		t.Fatalf("time %v (%v), want %v in UTC", got, got.Location(), local)
	}
	// A time with a monotonic reading also comes back as plain UTC.
	now := time.Now()
	b, err = Encode(market.Bid{Auction: aid, Bidder: bidder, Start: now})
	if err != nil {
		t.Fatal(err)
	}
	m, _ = Decode(b)
	if s := m.(market.Bid).Start; s != now.Round(0).UTC() {
		t.Fatalf("start %v, want %v", s, now.Round(0).UTC())
	}
}

// envelope marshals a hand-built envelope, bypassing Encode's checks.
func envelope(t *testing.T, env *pb.Envelope) []byte {
	t.Helper()
	b, err := proto.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// with returns an encodable message changed by f, marshalled without the
// checks, so that Decode sees exactly the bad value.
func raw(t *testing.T, m market.Msg, f func(*pb.Envelope)) []byte {
	t.Helper()
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	var env pb.Envelope
	if err := proto.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	f(&env)
	return envelope(t, &env)
}

func TestDecodeRejects(t *testing.T) {
	award := fullAward()
	cfp := market.CFP{Auction: aid, Manager: manager, Task: fullOffer()}
	status := market.TaskStatus{Key: key, Node: bidder, State: market.TaskRunning, Time: t0}
	hold := fullHold()
	holdReply := market.HoldReply{Auction: aid, Bidder: bidder, Replica: 1, OK: true}
	commit := market.Commit{Key: key, Epoch: 7, Rank: 1, Peers: gangPeers()}
	release := market.Release{Key: key, Epoch: 7}
	reserve := fullReserve()
	steal := fullSteal()
	transfer := fullTransfer()
	manyPeers := make([]string, MaxPeers+1)
	for i := range manyPeers {
		manyPeers[i] = "n"
	}
	spec := func(e *pb.Envelope) *pb.TaskSpec { return e.GetAward().Task }
	req := func(e *pb.Envelope) *pb.Request { return e.GetAward().Task.Offer.Request }
	long := func(n int) string { return strings.Repeat("x", n) }
	manyArgs := make([]string, MaxCommandArgs+1)
	for i := range manyArgs {
		manyArgs[i] = "a"
	}

	tests := []struct {
		name  string
		input []byte
		want  string // must appear in the error
	}{
		{"over the size limit", make([]byte, MaxMessageBytes+1), "over the size limit"},
		{"malformed", []byte{0x0a, 0xff, 0xff}, "malformed envelope"},
		{"truncated", raw(t, award, func(*pb.Envelope) {})[:50], "malformed envelope: award"},
		{"wrong wire type", []byte{0x08, 0x01, 0x3a, 0x02, 0x15, 0x00}, "malformed envelope: task_status.epoch: wrong wire type"},
		{"bad tag", []byte{0x08, 0x01, 0x00}, "malformed envelope: (top level): bad field tag"},
		{"invalid UTF-8 string", invalidUTF8(), "malformed envelope: cfp.task.type: invalid UTF-8"},
		{"wrong version", raw(t, cfp, func(e *pb.Envelope) { e.Version = 2 }), "version: 2 not supported"},
		{"no version", raw(t, cfp, func(e *pb.Envelope) { e.Version = 0 }), "version: 0 not supported"},
		{"empty envelope body", envelope(t, &pb.Envelope{Version: Version}), "body: required"},
		{"empty input", nil, "version: 0"},
		{"cfp without auction", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Auction = nil }), "cfp.auction: required"},
		{"cfp without task", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task = nil }), "cfp.task: required"},
		{"auction without key", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Auction.Key = nil }), "cfp.auction.key: required"},
		{"empty job", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Auction.Key.Job = "" }), "cfp.auction.key.job: required"},
		{"long job", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Auction.Key.Job = long(MaxJobIDLen + 1) }), "cfp.auction.key.job: 129 bytes"},
		{"job with slash", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Job = "a/b" }), "cfp.task.key.job"},
		{"job dot-dot", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Job = ".." }), "cfp.task.key.job"},
		{"job control char", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Job = "a\nb" }), "cfp.task.key.job: contains the non-printable"},
		{"empty task", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Task = "" }), "cfp.task.key.task: required"},
		{"task path", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Task = "../x" }), "cfp.task.key.task: invalid task name"},
		{"long task", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Task = long(MaxTaskNameLen + 1) }), "cfp.task.key.task: 65 bytes"},
		{"negative replica", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Replica = -1 }), "cfp.task.key.replica: -1 out of range"},
		{"replica too high", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Key.Replica = MaxReplica + 1 }), "cfp.task.key.replica"},
		{"negative round", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Auction.Round = -3 }), "cfp.auction.round"},
		{"empty manager", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Manager = "" }), "cfp.manager: required"},
		{"bad manager", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Manager = "12D3 Koo" }), "cfp.manager: invalid node ID"},
		{"long manager", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Manager = long(MaxNodeIDLen + 1) }), "cfp.manager: 129 bytes"},
		{"long type", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Type = long(MaxTypeLen + 1) }), "cfp.task.type: 129 characters"},
		{"priority", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Priority = 11 }), "cfp.task.priority: 11 out of range 0..10"},
		{"negative deadline", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.DeadlineUnixNano = -1 }), "cfp.task.deadline_unix_nano: "},
		{"negative estimate", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.EstimateNs = -1 }), "cfp.task.estimate_ns: negative"},
		{"huge estimate", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.EstimateNs = int64(MaxDuration + 1) }), "cfp.task.estimate_ns: "},
		{"negative cpu", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Request.CpuMilli = -1 }), "cfp.task.request.cpu_milli: negative"},
		{"huge cpu", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.Request.CpuMilli = MaxCPUMilli + 1 }), "cfp.task.request.cpu_milli: "},
		{"negative memory", raw(t, award, func(e *pb.Envelope) { req(e).Memory = -1 }), "award.task.offer.request.memory: negative"},
		{"input leaves the work dir", raw(t, award, func(e *pb.Envelope) { e.GetAward().Task.Inputs[0].Path = "../x" }), "award.task.inputs[0].path: \"../x\" leaves the work directory"},
		{"input bad manifest", raw(t, award, func(e *pb.Envelope) { e.GetAward().Task.Inputs[1].Data.Manifest = "xyz" }), "award.task.inputs[1].data.manifest: not a manifest ID"},
		{"input without data", raw(t, award, func(e *pb.Envelope) { e.GetAward().Task.Inputs[1].Data = nil }), "award.task.inputs[1].data: required"},
		{"absolute output", raw(t, award, func(e *pb.Envelope) { e.GetAward().Task.Outputs[0].Path = "/etc" }), "award.task.outputs[0].path: \"/etc\" is absolute"},
		{"outputs of a bad holder", raw(t, status, func(e *pb.Envelope) {
			e.GetTaskStatus().Outputs = &pb.DataRef{Manifest: strings.Repeat("ab", 32), Holders: []string{"é"}}
		}), "task_status.outputs.holders[0]: invalid node ID"},
		{"negative disk", raw(t, award, func(e *pb.Envelope) { req(e).Disk = -5 }), "award.task.offer.request.disk: negative"},
		{"huge disk", raw(t, award, func(e *pb.Envelope) { req(e).Disk = MaxBytes + 1 }), "award.task.offer.request.disk"},
		{"negative gpu count", raw(t, award, func(e *pb.Envelope) { req(e).Gpu.Count = -1 }), "award.task.offer.request.gpu.count: -1 out of range 0..64"},
		{"gpu count over 64", raw(t, award, func(e *pb.Envelope) { req(e).Gpu.Count = 65 }), "award.task.offer.request.gpu.count: 65 out of range 0..64"},
		{"negative share", raw(t, award, func(e *pb.Envelope) { req(e).Gpu.ShareMilli = -1 }), "award.task.offer.request.gpu.share_milli: negative"},
		{"share over 1000", raw(t, award, func(e *pb.Envelope) { req(e).Gpu.ShareMilli = 1001 }), "award.task.offer.request.gpu.share_milli: 1001 out of range 0..1000"},
		{"negative gpu memory", raw(t, award, func(e *pb.Envelope) { req(e).Gpu.Memory = -1 }), "award.task.offer.request.gpu.memory: negative"},
		{"long gpu model", raw(t, award, func(e *pb.Envelope) { req(e).Gpu.Model = long(MaxModelLen + 1) }), "award.task.offer.request.gpu.model"},
		{"too many devices", raw(t, award, func(e *pb.Envelope) {
			for range MaxDevices {
				req(e).Devices = append(req(e).Devices, &pb.DeviceRequest{Kind: "x", Count: 1})
			}
		}), "award.task.offer.request.devices: 18 device requests"},
		{"device kind empty", raw(t, award, func(e *pb.Envelope) { req(e).Devices[1].Kind = "" }), "award.task.offer.request.devices[1].kind: required"},
		{"device kind bad", raw(t, award, func(e *pb.Envelope) { req(e).Devices[0].Kind = "-x" }), "award.task.offer.request.devices[0].kind: invalid"},
		{"device count zero", raw(t, award, func(e *pb.Envelope) { req(e).Devices[0].Count = 0 }), "award.task.offer.request.devices[0].count: 0 out of range 1..64"},
		{"device model non-printable", raw(t, award, func(e *pb.Envelope) { req(e).Devices[0].Model = "a\x00" }), "award.task.offer.request.devices[0].model"},
		{"too many labels", raw(t, award, func(e *pb.Envelope) {
			for i := range MaxLabels {
				req(e).Labels[long(i+1)] = "v"
			}
		}), "award.task.offer.request.labels: 66 labels"},
		{"bad label key", raw(t, award, func(e *pb.Envelope) { req(e).Labels["=bad"] = "v" }), `award.task.offer.request.labels["=bad"]: invalid label key`},
		{"long label value", raw(t, award, func(e *pb.Envelope) { req(e).Labels["zone"] = long(MaxLabelValueLen + 1) }), `award.task.offer.request.labels["zone"]: 257 characters`},
		{"long site", raw(t, award, func(e *pb.Envelope) { req(e).Site = long(MaxSiteLen + 1) }), "award.task.offer.request.site"},
		{"award without task", raw(t, award, func(e *pb.Envelope) { e.GetAward().Task = nil }), "award.task: required"},
		{"award without offer", raw(t, award, func(e *pb.Envelope) { spec(e).Offer = nil }), "award.task.offer: required"},
		{"award without bid", raw(t, award, func(e *pb.Envelope) { e.GetAward().Bid = nil }), "award.bid: required"},
		{"empty command", raw(t, award, func(e *pb.Envelope) { spec(e).Command = nil }), "award.task.command: required"},
		{"empty program", raw(t, award, func(e *pb.Envelope) { spec(e).Command[0] = "" }), "award.task.command[0]: empty program name"},
		{"too many args", raw(t, award, func(e *pb.Envelope) { spec(e).Command = manyArgs }), "award.task.command: 1025 arguments, over the limit of 1024"},
		{"command too long", raw(t, award, func(e *pb.Envelope) {
			spec(e).Command = []string{"sh", long(MaxCommandBytes / 2), long(MaxCommandBytes / 2)}
		}), "award.task.command: over 131072 bytes"},
		{"NUL in arg", raw(t, award, func(e *pb.Envelope) { spec(e).Command[2] = "a\x00b" }), "award.task.command[2]: contains a NUL byte"},
		{"too many env", raw(t, award, func(e *pb.Envelope) {
			for i := range MaxEnvEntries {
				spec(e).Env["V"+long(i)] = ""
			}
		}), "award.task.env: 259 variables"},
		{"bad env name", raw(t, award, func(e *pb.Envelope) { spec(e).Env["1X"] = "v" }), `award.task.env["1X"]: invalid variable name`},
		{"env name with =", raw(t, award, func(e *pb.Envelope) { spec(e).Env["A=B"] = "v" }), `award.task.env["A=B"]: invalid variable name`},
		{"env NUL value", raw(t, award, func(e *pb.Envelope) { spec(e).Env["X"] = "a\x00" }), `award.task.env["X"]: value contains a NUL byte`},
		{"env too big", raw(t, award, func(e *pb.Envelope) { spec(e).Env["BIG"] = long(MaxEnvBytes) }), "award.task.env: "},
		{"negative timeout", raw(t, award, func(e *pb.Envelope) { spec(e).TimeoutNs = -1 }), "award.task.timeout_ns: negative"},
		{"huge checkpoint interval", raw(t, award, func(e *pb.Envelope) { spec(e).CheckpointIntervalNs = math.MaxInt64 }), "award.task.checkpoint_interval_ns: "},
		{"negative attempt", raw(t, award, func(e *pb.Envelope) { spec(e).Attempt = -1 }), "award.task.attempt: -1 out of range"},
		{"award bid bad bidder", raw(t, award, func(e *pb.Envelope) { e.GetAward().Bid.Bidder = "" }), "award.bid.bidder: required"},
		{"bid NaN score", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().Score = math.NaN() }), "bid.score: NaN is not a finite number"},
		{"bid infinite score", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().Score = math.Inf(1) }), "bid.score: +Inf"},
		{"bid negative start", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().StartUnixNano = -10 }), "bid.start_unix_nano: 1969-12-31T23:59:59.99999999Z out of range"},
		{"bid negative finish", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().FinishUnixNano = math.MinInt64 }), "bid.finish_unix_nano"},
		{"bid negative runtime", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().RuntimeNs = -1 }), "bid.runtime_ns: negative"},
		{"bid without auction", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().Auction = nil }), "bid.auction: required"},
		{"nobid long reason", raw(t, market.NoBid{Auction: aid, Bidder: bidder}, func(e *pb.Envelope) { e.GetNoBid().Reason = long(MaxReasonLen + 1) }), "no_bid.reason: 4097 bytes"},
		{"nobid no bidder", raw(t, market.NoBid{Auction: aid, Bidder: bidder}, func(e *pb.Envelope) { e.GetNoBid().Bidder = "" }), "no_bid.bidder: required"},
		{"award reply long reason", raw(t, market.AwardReply{Auction: aid, Bidder: bidder}, func(e *pb.Envelope) { e.GetAwardReply().Reason = long(MaxReasonLen + 1) }), "award_reply.reason"},
		{"award reply no auction", raw(t, market.AwardReply{Auction: aid, Bidder: bidder}, func(e *pb.Envelope) { e.GetAwardReply().Auction = nil }), "award_reply.auction: required"},
		{"status unknown state", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().State = "exploded" }), `task_status.state: unknown task state "exploded"`},
		{"status empty state", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().State = "" }), `task_status.state: unknown task state ""`},
		{"status no node", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().Node = "" }), "task_status.node: required"},
		{"status no key", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().Key = nil }), "task_status.key: required"},
		{"status negative attempt", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().Attempt = -2 }), "task_status.attempt"},
		{"status negative time", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().TimeUnixNano = -1 }), "task_status.time_unix_nano"},
		{"status negative runtime", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().RuntimeNs = -1 }), "task_status.runtime_ns: negative"},
		{"status running wants ack", raw(t, status, func(e *pb.Envelope) { e.GetTaskStatus().AckWanted = true }), `task_status.ack_wanted: set on state "running"`},
		{"result ack no key", raw(t, market.ResultAck{Key: key}, func(e *pb.Envelope) { e.GetResultAck().Key = nil }), "result_ack.key: required"},
		{"result ack negative attempt", raw(t, market.ResultAck{Key: key}, func(e *pb.Envelope) { e.GetResultAck().Attempt = -1 }), "result_ack.attempt: -1 out of range"},
		{"cancel empty task", raw(t, market.CancelTask{Key: key}, func(e *pb.Envelope) { e.GetCancelTask().Key.Task = "" }), "cancel_task.key.task: required"},
		{"cancel long reason", raw(t, market.CancelTask{Key: key}, func(e *pb.Envelope) { e.GetCancelTask().Reason = long(MaxReasonLen + 1) }), "cancel_task.reason"},

		// Gang fields of existing messages.
		{"negative gang size", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.GangSize = -1 }), "cfp.task.gang_size: -1 out of range 0..1000"},
		{"gang size over the limit", raw(t, cfp, func(e *pb.Envelope) { e.GetCfp().Task.GangSize = MaxGangSize + 1 }), "cfp.task.gang_size: 1001 out of range 0..1000"},
		{"award gang size", raw(t, award, func(e *pb.Envelope) { spec(e).Offer.GangSize = math.MaxInt32 }), "award.task.offer.gang_size: 2147483647 out of range"},
		{"negative rank", raw(t, award, func(e *pb.Envelope) { spec(e).Rank = -1 }), "award.task.rank: -1 out of range 0..999"},
		{"rank over the limit", raw(t, award, func(e *pb.Envelope) { spec(e).Rank = MaxRank + 1 }), "award.task.rank: 1000 out of range 0..999"},
		{"too many peers", raw(t, award, func(e *pb.Envelope) { spec(e).Peers = manyPeers }), "award.task.peers: 1001 node IDs, over the limit of 1000"},
		{"empty peer", raw(t, award, func(e *pb.Envelope) { spec(e).Peers[2] = "" }), "award.task.peers[2]: required"},
		{"bad peer", raw(t, award, func(e *pb.Envelope) { spec(e).Peers[1] = "a/b" }), "award.task.peers[1]: invalid node ID"},
		{"long peer", raw(t, award, func(e *pb.Envelope) { spec(e).Peers[0] = long(MaxNodeIDLen + 1) }), "award.task.peers[0]: 129 bytes"},
		{"negative slots", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().Slots = -1 }), "bid.slots: -1 out of range 0..1000"},
		{"slots over the limit", raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().Slots = MaxSlots + 1 }), "bid.slots: 1001 out of range 0..1000"},
		{"award bid slots", raw(t, award, func(e *pb.Envelope) { e.GetAward().Bid.Slots = -7 }), "award.bid.slots: -7 out of range"},

		// Hold.
		{"hold empty", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_Hold{Hold: &pb.Hold{}}}), "hold.auction: required"},
		{"hold without auction", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Auction = nil }), "hold.auction: required"},
		{"hold bad auction key", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Auction.Key.Job = ".." }), "hold.auction.key.job: invalid job ID"},
		{"hold no manager", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Manager = "" }), "hold.manager: required"},
		{"hold bad manager", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Manager = "x y" }), "hold.manager: invalid node ID"},
		{"hold without task", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task = nil }), "hold.task: required"},
		{"hold without offer", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task.Offer = nil }), "hold.task.offer: required"},
		{"hold empty command", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task.Command = nil }), "hold.task.command: required"},
		{"hold bad gang size", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task.Offer.GangSize = MaxGangSize + 1 }), "hold.task.offer.gang_size: 1001 out of range"},
		{"hold bad request", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task.Offer.Request.Gpu.ShareMilli = 1001 }), "hold.task.offer.request.gpu.share_milli: 1001 out of range"},
		{"hold too many peers", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task.Peers = manyPeers }), "hold.task.peers: 1001 node IDs"},
		{"hold bad rank", raw(t, hold, func(e *pb.Envelope) { e.GetHold().Task.Rank = MaxRank + 1 }), "hold.task.rank: 1000 out of range"},
		{"hold no expiry", raw(t, hold, func(e *pb.Envelope) { e.GetHold().ExpiresUnixNano = 0 }), "hold.expires_unix_nano: required"},
		{"hold negative expiry", raw(t, hold, func(e *pb.Envelope) { e.GetHold().ExpiresUnixNano = -1 }), "hold.expires_unix_nano: 1969-12-31T23:59:59.999999999Z out of range"},

		// HoldReply.
		{"hold reply without auction", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Auction = nil }), "hold_reply.auction: required"},
		{"hold reply bad round", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Auction.Round = -1 }), "hold_reply.auction.round: -1 out of range"},
		{"hold reply no bidder", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Bidder = "" }), "hold_reply.bidder: required"},
		{"hold reply long bidder", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Bidder = long(MaxNodeIDLen + 1) }), "hold_reply.bidder: 129 bytes"},
		{"hold reply negative replica", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Replica = -1 }), "hold_reply.replica: -1 out of range 0..999"},
		{"hold reply replica over the limit", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Replica = MaxReplica + 1 }), "hold_reply.replica: 1000 out of range 0..999"},
		{"hold reply long reason", raw(t, holdReply, func(e *pb.Envelope) { e.GetHoldReply().Reason = long(MaxReasonLen + 1) }), "hold_reply.reason: 4097 bytes"},

		// Commit.
		{"commit without key", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Key = nil }), "commit.key: required"},
		{"commit bad task", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Key.Task = "a b" }), "commit.key.task: invalid task name"},
		{"commit bad replica", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Key.Replica = MaxReplica + 1 }), "commit.key.replica: 1000 out of range"},
		{"commit negative rank", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Rank = -1 }), "commit.rank: -1 out of range 0..999"},
		{"commit rank over the limit", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Rank = MaxRank + 1 }), "commit.rank: 1000 out of range 0..999"},
		{"commit too many peers", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Peers = manyPeers }), "commit.peers: 1001 node IDs, over the limit of 1000"},
		{"commit empty peer", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Peers[3] = "" }), "commit.peers[3]: required"},
		{"commit bad peer", raw(t, commit, func(e *pb.Envelope) { e.GetCommit().Peers[0] = "12D3 Koo" }), "commit.peers[0]: invalid node ID"},

		// Release.
		{"release without key", raw(t, release, func(e *pb.Envelope) { e.GetRelease().Key = nil }), "release.key: required"},
		{"release empty job", raw(t, release, func(e *pb.Envelope) { e.GetRelease().Key.Job = "" }), "release.key.job: required"},
		{"release negative replica", raw(t, release, func(e *pb.Envelope) { e.GetRelease().Key.Replica = -1 }), "release.key.replica: -1 out of range"},

		// Reserve.
		{"reserve without auction", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Auction = nil }), "reserve.auction: required"},
		{"reserve auction without key", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Auction.Key = nil }), "reserve.auction.key: required"},
		{"reserve no manager", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Manager = "" }), "reserve.manager: required"},
		{"reserve bad manager", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Manager = "é" }), "reserve.manager: invalid node ID"},
		{"reserve negative cpu", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Request.CpuMilli = -1 }), "reserve.request.cpu_milli: negative"},
		{"reserve bad device", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Request.Devices[0].Count = 65 }), "reserve.request.devices[0].count: 65 out of range 1..64"},
		{"reserve empty device", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Request.Devices[1] = &pb.DeviceRequest{} }), "reserve.request.devices[1].kind: required"},
		{"reserve too many devices", raw(t, reserve, func(e *pb.Envelope) {
			for range MaxDevices {
				e.GetReserve().Request.Devices = append(e.GetReserve().Request.Devices, &pb.DeviceRequest{Kind: "x", Count: 1})
			}
		}), "reserve.request.devices: 18 device requests"},
		{"reserve unknown limit", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Request.Limits = 4 }), "reserve.request.limits: unknown limit bits 0x4"},
		{"reserve bad label", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Request.Labels["/x"] = "v" }), `reserve.request.labels["/x"]: invalid label key`},
		{"reserve negative priority", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Priority = -1 }), "reserve.priority: -1 out of range 0..10"},
		{"reserve priority over 10", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().Priority = 11 }), "reserve.priority: 11 out of range 0..10"},
		{"reserve negative until", raw(t, reserve, func(e *pb.Envelope) { e.GetReserve().UntilUnixNano = -5 }), "reserve.until_unix_nano: "},
		{"steal request negative ends_by", raw(t, fullSteal(), func(e *pb.Envelope) { e.GetStealRequest().EndsByUnixNano = -5 }), "steal_request.ends_by_unix_nano: "},

		// StealRequest.
		{"steal request empty", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_StealRequest{StealRequest: &pb.StealRequest{}}}), "steal_request.thief: required"},
		{"steal request no thief", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Thief = "" }), "steal_request.thief: required"},
		{"steal request bad thief", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Thief = "a b" }), "steal_request.thief: invalid node ID"},
		{"steal request long thief", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Thief = long(MaxNodeIDLen + 1) }), "steal_request.thief: 129 bytes"},
		{"steal request negative cpu", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Room.CpuMilli = -1 }), "steal_request.room.cpu_milli: negative"},
		{"steal request huge memory", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Room.Memory = MaxBytes + 1 }), "steal_request.room.memory: "},
		{"steal request bad gpu share", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Room.Gpu.ShareMilli = 1001 }), "steal_request.room.gpu.share_milli: 1001 out of range 0..1000"},
		{"steal request empty device", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Room.Devices[0] = &pb.DeviceRequest{} }), "steal_request.room.devices[0].kind: required"},
		{"steal request too many devices", raw(t, steal, func(e *pb.Envelope) {
			for range MaxDevices {
				e.GetStealRequest().Room.Devices = append(e.GetStealRequest().Room.Devices, &pb.DeviceRequest{Kind: "x", Count: 1})
			}
		}), "steal_request.room.devices: 18 device requests"},
		{"steal request bad label", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Room.Labels["-x"] = "v" }), `steal_request.room.labels["-x"]: invalid label key`},
		{"steal request zero max", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Max = 0 }), "steal_request.max: 0 out of range 1..1024"},
		{"steal request negative max", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Max = -1 }), "steal_request.max: -1 out of range 1..1024"},
		{"steal request max over 1024", raw(t, steal, func(e *pb.Envelope) { e.GetStealRequest().Max = MaxStealTasks + 1 }), "steal_request.max: 1025 out of range 1..1024"},

		// Transfer.
		{"transfer empty", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_Transfer{Transfer: &pb.Transfer{}}}), "transfer.key: required"},
		{"transfer without key", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().Key = nil }), "transfer.key: required"},
		{"transfer bad job", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().Key.Job = "a/b" }), "transfer.key.job"},
		{"transfer bad replica", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().Key.Replica = MaxReplica + 1 }), "transfer.key.replica: 1000 out of range"},

		// ManagerQuery and ManagerAnswer.
		{"manager query empty", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerQuery{}}), "manager_query.job: required"},
		{"manager query no job", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerQuery{ManagerQuery: &pb.ManagerQuery{From: string(bidder)}}}), "manager_query.job: required"},
		{"manager answer empty", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerAnswer{}}), "manager_answer.job: required"},
		{"manager answer long job", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerAnswer{ManagerAnswer: &pb.ManagerAnswer{Job: strings.Repeat("j", 200), From: string(bidder)}}}), "manager_answer.job"},
		{"manager claim empty", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerClaim{}}), "manager_claim"},
		{"manager claim no state", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerClaim{ManagerClaim: &pb.ManagerClaim{Job: key.Job, From: string(bidder)}}}), "manager_claim.state: required"},
		{"manager claim bad state", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerClaim{ManagerClaim: &pb.ManagerClaim{Job: key.Job, From: string(bidder), State: "won"}}}), "manager_claim.state: unknown job state"},
		{"manager claim too many", envelope(t, &pb.Envelope{Version: Version, Body: &pb.Envelope_ManagerClaim{ManagerClaim: &pb.ManagerClaim{Job: key.Job, From: string(bidder), State: "running", Succeeded: 1 << 31}}}), "manager_claim.succeeded"},
		{"transfer no from", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().From = "" }), "transfer.from: required"},
		{"transfer bad from", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().From = "12D3/Koo" }), "transfer.from: invalid node ID"},
		{"transfer long from", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().From = long(MaxNodeIDLen + 1) }), "transfer.from: 129 bytes"},
		{"transfer no to", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().To = "" }), "transfer.to: required"},
		{"transfer bad to", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().To = "x\ny" }), "transfer.to: invalid node ID"},
		{"transfer long to", raw(t, transfer, func(e *pb.Envelope) { e.GetTransfer().To = long(MaxNodeIDLen + 1) }), "transfer.to: 129 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.input)
			if err == nil {
				t.Fatalf("Decode accepted %#v", m)
			}
			t.Log(err)
			if !strings.HasPrefix(err.Error(), "wire: ") {
				t.Errorf("error %q lacks the wire: prefix", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

// invalidUTF8 builds an envelope whose cfp.task.type is not UTF-8, by
// hand, since proto.Marshal refuses to write one: Envelope.cfp (field 2)
// holds Cfp.task (field 3), which holds TaskOffer.type (field 2).
func invalidUTF8() []byte {
	offer := []byte{0x12, 0x01, 0xff} // TaskOffer.type = "\xff"
	cfp := append([]byte{0x1a, byte(len(offer))}, offer...)
	return append([]byte{0x08, 0x01, 0x12, byte(len(cfp))}, cfp...)
}

func TestDecodeFieldError(t *testing.T) {
	b := raw(t, fullBid(), func(e *pb.Envelope) { e.GetBid().RuntimeNs = -1 })
	_, err := Decode(b)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "bid.runtime_ns" {
		t.Fatalf("error %v: want a *FieldError for bid.runtime_ns", err)
	}
	if _, err := Decode(make([]byte, MaxMessageBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize error %v does not wrap ErrTooLarge", err)
	}
}

func TestDecodeKeepsUnknownFieldsCompatible(t *testing.T) {
	b, err := Encode(fullBid())
	if err != nil {
		t.Fatal(err)
	}
	// Field 99 (varint) is unknown to version 1 and must be ignored.
	b = append(b, 0x98, 0x06, 0x01)
	m, err := Decode(b)
	if err != nil || !reflect.DeepEqual(m, fullBid()) {
		t.Fatalf("Decode with an unknown field: %v, %#v", err, m)
	}
}

func TestEncodeRejects(t *testing.T) {
	// Every field within its limit, yet the whole over MaxMessageBytes:
	// a full command, full environment and full labels of 4-byte runes.
	big := fullSpec()
	big.Command = []string{"sh"}
	for range 4 {
		big.Command = append(big.Command, strings.Repeat("y", MaxCommandBytes/4-1))
	}
	big.Env = map[string]string{}
	for i := range 64 {
		big.Env[fmt.Sprintf("V%02d", i)] = strings.Repeat("z", 1000)
	}
	big.Request.Labels = map[string]string{}
	for i := range MaxLabels {
		big.Request.Labels[fmt.Sprintf("k%02d", i)] = strings.Repeat("𝔸", MaxLabelValueLen)
	}
	tests := []struct {
		name string
		msg  market.Msg
		want string
	}{
		{"nil", nil, "wire: nil message"},
		{"pointer", &market.CFP{Auction: aid, Manager: manager, Task: fullOffer()}, "unsupported message type *market.CFP"},
		{"invalid field", market.CFP{Auction: aid, Manager: "", Task: fullOffer()}, "wire: cfp.manager: required"},
		{"time before epoch", market.Bid{Auction: aid, Bidder: bidder, Start: time.Unix(-1, 0)}, "wire: bid.start_unix_nano"},
		{"the epoch itself", market.Bid{Auction: aid, Bidder: bidder, Start: time.Unix(0, 0)}, "wire: bid.start_unix_nano"},
		{"time after 2262", market.TaskStatus{Key: key, Node: bidder, State: market.TaskRunning, Time: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}, "wire: task_status.time_unix_nano"},
		{"exit code over int32", market.TaskStatus{Key: key, Node: bidder, State: market.TaskFailed, ExitCode: math.MaxInt32 + 1}, "wire: task_status.exit_code"},
		{"round over int32", market.NoBid{Auction: market.AuctionID{Key: key, Round: math.MaxInt32 + 1}, Bidder: bidder}, "wire: no_bid.auction.round"},
		{"invalid UTF-8 reason", market.NoBid{Auction: aid, Bidder: bidder, Reason: "\xff"}, "wire: no_bid.reason: not valid UTF-8"},
		{"ticket over its limit", market.Award{Auction: aid, Manager: manager, Task: fullSpec(), Bid: fullBid(), Ticket: make([]byte, auth.MaxTicketBytes+1)}, "wire: award.ticket"},
		{"owner not a name", market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, Owner: "a b"}, Bid: fullBid()}, "wire: award.task.owner"},
		{"image not a reference", market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, Image: "Bad Image", ImageID: "sha256:" + strings.Repeat("00", 32)}, Bid: fullBid()}, "wire: award.task.image"},
		{"image id not a digest", market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, Image: "busybox", ImageID: "sha256:xyz"}, Bid: fullBid()}, "wire: award.task.image"},
		{"image id without image", market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, ImageID: "sha256:" + strings.Repeat("00", 32)}, Bid: fullBid()}, "wire: award.task.image"},
		{"gang size over int32", market.CFP{Auction: aid, Manager: manager, Task: market.TaskOffer{Key: key, GangSize: math.MaxInt32 + 1}}, "wire: cfp.task.gang_size"},
		{"slots over the limit", market.Bid{Auction: aid, Bidder: bidder, Slots: MaxSlots + 1}, "wire: bid.slots: 1001 out of range"},
		{"spec rank over int32", market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, Rank: math.MaxInt32 + 1}, Bid: fullBid()}, "wire: award.task.rank"},
		{"spec invalid peer", market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, Peers: []market.NodeID{"a", ""}}, Bid: fullBid()}, "wire: award.task.peers[1]: required"},
		{"hold zero expiry", market.Hold{Auction: aid, Manager: manager, Task: fullSpec()}, "wire: hold.expires_unix_nano: required"},
		{"hold expiry at the epoch", market.Hold{Auction: aid, Manager: manager, Task: fullSpec(), Expires: time.Unix(0, 0)}, "wire: hold.expires_unix_nano: 1970-01-01T00:00:00Z out of range"},
		{"hold no task", market.Hold{Auction: aid, Manager: manager, Expires: t0}, "wire: hold.task.offer.key.job: required"},
		{"hold reply replica over int32", market.HoldReply{Auction: aid, Bidder: bidder, Replica: math.MaxInt32 + 1}, "wire: hold_reply.replica"},
		{"hold reply invalid UTF-8", market.HoldReply{Auction: aid, Bidder: bidder, Reason: "a\xffb"}, "wire: hold_reply.reason: not valid UTF-8"},
		{"commit rank over int32", market.Commit{Key: key, Rank: math.MaxInt32 + 1}, "wire: commit.rank"},
		{"commit too many peers", market.Commit{Key: key, Peers: make([]market.NodeID, MaxPeers+1)}, "wire: commit.peers: 1001 node IDs"},
		{"release no key", market.Release{}, "wire: release.key.job: required"},
		{"reserve priority", market.Reserve{Auction: aid, Manager: manager, Priority: MaxPriority + 1}, "wire: reserve.priority: 11 out of range"},
		{"reserve until after 2262", market.Reserve{Auction: aid, Manager: manager, Until: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}, "wire: reserve.until_unix_nano"},
		{"reserve since after 2262", market.Reserve{Auction: aid, Manager: manager, Since: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}, "wire: reserve.since_unix_nano"},
		{"steal request ends by after 2262", market.StealRequest{Thief: bidder, Max: 1, EndsBy: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}, "wire: steal_request.ends_by_unix_nano"},
		{"steal request no max", market.StealRequest{Thief: bidder}, "wire: steal_request.max: 0 out of range 1..1024"},
		{"steal request max over int32", market.StealRequest{Thief: bidder, Max: math.MaxInt32 + 1}, "wire: steal_request.max"},
		{"steal request no thief", market.StealRequest{Max: 1}, "wire: steal_request.thief: required"},
		{"steal request bad room", market.StealRequest{Thief: bidder, Room: resource.Request{Disk: -1}, Max: 1}, "wire: steal_request.room.disk: negative"},
		{"transfer no key", market.Transfer{From: bidder, To: manager}, "wire: transfer.key.job: required"},
		{"transfer no from", market.Transfer{Key: key, To: manager}, "wire: transfer.from: required"},
		{"transfer no to", market.Transfer{Key: key, From: bidder}, "wire: transfer.to: required"},
		{"transfer invalid to", market.Transfer{Key: key, From: bidder, To: "n 2"}, "wire: transfer.to: invalid node ID"},
		{"manager query no job", market.ManagerQuery{From: bidder}, "wire: manager_query.job: required"},
		{"manager query bad job", market.ManagerQuery{Job: "a/b", From: bidder}, "wire: manager_query.job"},
		{"manager query no from", market.ManagerQuery{Job: key.Job}, "wire: manager_query.from: required"},
		{"manager answer bad from", market.ManagerAnswer{Job: key.Job, From: "n 2"}, "wire: manager_answer.from: invalid node ID"},
		{"manager claim no state", market.ManagerClaim{Job: key.Job, From: bidder}, "wire: manager_claim.state: required"},
		{"manager claim negative", market.ManagerClaim{Job: key.Job, From: bidder, Rank: market.ClaimRank{State: market.JobRunning, Running: -1}}, "wire: manager_claim.running: -1 out of range"},
		{"manager claim no job", market.ManagerClaim{From: bidder, Rank: market.ClaimRank{State: market.JobRunning}}, "wire: manager_claim.job: required"},
		{"manager claim bad taken_from", market.ManagerClaim{Job: key.Job, From: bidder, Rank: market.ClaimRank{State: market.JobRunning, TakenFrom: "n 2"}}, "wire: manager_claim.taken_from: invalid node ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.msg)
			if err == nil {
				t.Fatalf("Encode accepted it (%d bytes)", len(b))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestLargestMessagesFit: an award and a hold with every field at its
// limit and the largest ticket fit MaxMessageBytes, and decode.
func TestLargestMessagesFit(t *testing.T) {
	big := fullSpec()
	big.Command = []string{"sh"}
	for range 4 {
		big.Command = append(big.Command, strings.Repeat("y", MaxCommandBytes/4-1))
	}
	big.Env = map[string]string{}
	for i := range 64 {
		big.Env[fmt.Sprintf("V%02d", i)] = strings.Repeat("z", 1000)
	}
	big.Request.Labels = map[string]string{}
	for i := range MaxLabels {
		big.Request.Labels[fmt.Sprintf("k%02d", i)] = strings.Repeat("𝔸", MaxLabelValueLen)
	}
	tk := make([]byte, auth.MaxTicketBytes)
	for _, m := range []market.Msg{
		market.Award{Auction: aid, Manager: manager, Task: big, Bid: fullBid(), Ticket: tk},
		market.Hold{Auction: aid, Manager: manager, Task: big, Expires: t0, Ticket: tk},
	} {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if _, err := Decode(b); err != nil {
			t.Fatalf("%T of %d bytes: %v", m, len(b), err)
		}
	}
}

// TestEncodeLimitsAreDecodeLimits checks that the largest values Encode
// accepts also decode: a message at every field's limit.
func TestEncodeLimitsAreDecodeLimits(t *testing.T) {
	s := fullSpec()
	s.Key = market.TaskKey{Job: strings.Repeat("j", MaxJobIDLen), Task: strings.Repeat("t", MaxTaskNameLen), Replica: MaxReplica}
	s.Type = strings.Repeat("т", MaxTypeLen)
	s.Priority = MaxPriority
	s.Estimate, s.Timeout, s.CheckpointInterval = MaxDuration, MaxDuration, MaxDuration
	s.Request.CPU, s.Request.Memory, s.Request.Disk = MaxCPUMilli, MaxBytes, MaxBytes
	s.Request.GPU = resource.GPURequest{Count: MaxGPUCount, Share: MaxGPUShareMilli, Memory: MaxBytes, Model: strings.Repeat("m", MaxModelLen)}
	s.Request.Devices = nil
	for i := range MaxDevices {
		s.Request.Devices = append(s.Request.Devices, resource.DeviceRequest{Kind: strings.Repeat("k", i+1), Count: MaxDeviceCount})
	}
	s.Request.Site = strings.Repeat("s", MaxSiteLen)
	s.Command = make([]string, MaxCommandArgs)
	for i := range s.Command {
		s.Command[i] = strings.Repeat("a", MaxCommandBytes/MaxCommandArgs)
	}
	s.Attempt = MaxCounter
	s.GangSize, s.Rank = MaxGangSize, MaxRank
	s.Peers = make([]market.NodeID, MaxPeers)
	for i := range s.Peers {
		s.Peers[i] = market.NodeID(fmt.Sprintf("%0*d", MaxNodeIDLen, i))
	}
	maxAuction := market.AuctionID{Key: s.Key, Epoch: math.MaxUint64, Round: MaxCounter}
	maxNode := market.NodeID(strings.Repeat("b", MaxNodeIDLen))
	maxTime := time.Unix(0, math.MaxInt64).UTC()
	msgs := []market.Msg{
		market.Award{Auction: maxAuction, Manager: manager, Task: s,
			Bid: market.Bid{Auction: aid, Bidder: maxNode, Finish: maxTime, Slots: MaxSlots}, Last: true},
		market.Hold{Auction: maxAuction, Manager: maxNode, Task: s, Expires: maxTime},
		market.HoldReply{Auction: maxAuction, Bidder: maxNode, Replica: MaxReplica, OK: true, Reason: strings.Repeat("r", MaxReasonLen)},
		market.Commit{Key: s.Key, Epoch: math.MaxUint64, Rank: MaxRank, Peers: s.Peers},
		market.Release{Key: s.Key, Epoch: math.MaxUint64},
		market.Reserve{Auction: maxAuction, Manager: maxNode, Request: s.Request, Priority: MaxPriority, Until: maxTime, Since: maxTime},
		market.StealRequest{Thief: maxNode, Room: s.Request, Max: MaxStealTasks},
		market.Transfer{Key: s.Key, Epoch: math.MaxUint64, From: maxNode, To: maxNode},
		market.ManagerAnswer{Job: s.Key.Job, From: maxNode, Manages: true},
	}
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("%s: %v", market.Kind(m), err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", market.Kind(m), err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("%s: round trip at the limits differs", market.Kind(m))
		}
	}
}

// TestAwardLast checks that Award.Last travels as field 5 of Award, and
// that an award without it (as an older manager sends) decodes with
// Last false.
func TestAwardLast(t *testing.T) {
	b, err := Encode(fullAward())
	if err != nil {
		t.Fatal(err)
	}
	var env pb.Envelope
	if err := proto.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	if !env.GetAward().GetLast() {
		t.Fatal("pb Award.last not set for an award with Last")
	}
	env.GetAward().Last = false
	m, err := Decode(envelope(t, &env))
	if err != nil {
		t.Fatal(err)
	}
	if m.(market.Award).Last {
		t.Fatal("award without last decodes with Last set")
	}
}

// TestDecodeEmptyPeersNil checks that an empty peer list decodes as nil,
// as the package promises for every empty slice.
func TestDecodeEmptyPeersNil(t *testing.T) {
	for _, m := range []market.Msg{
		market.Commit{Key: key, Peers: []market.NodeID{}},
		market.Award{Auction: aid, Manager: manager, Task: market.TaskSpec{TaskOffer: shareOffer(), Command: []string{"x"}, Peers: []market.NodeID{}}, Bid: fullBid()},
	} {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		var peers []market.NodeID
		switch x := got.(type) {
		case market.Commit:
			peers = x.Peers
		case market.Award:
			peers = x.Task.Peers
		}
		if peers != nil {
			t.Errorf("%s: empty peers decode as %#v, want nil", market.Kind(m), peers)
		}
	}
}

// TestFixturesFillEveryField guards the round trip against new fields:
// every field of the "full" fixtures must be set, so that a field added
// to a market message and not carried by the wire fails TestRoundTrip.
func TestFixturesFillEveryField(t *testing.T) {
	tests := []struct {
		msg    market.Msg
		exempt string // a field legitimately zero, covered by another row
	}{
		{market.CFP{Auction: aid, Manager: manager, Task: fullOffer(), Ticket: ticket}, "Task.Request.GPU.Share"},
		{fullBid(), ""},
		{market.NoBid{Auction: aid, Bidder: bidder, Reason: "r", Permanent: true, NeedTicket: true}, ""},
		{fullAward(), "Task.TaskOffer.Request.GPU.Share"},
		{market.AwardReply{Auction: aid, Bidder: bidder, Accept: true, Reason: "r", Start: time.Unix(1_700_000_000, 7).UTC()}, ""},
		{roundTrips()[10].msg, ""},
		{market.CancelTask{Key: key, Epoch: 7, Reason: "r"}, ""},
		{market.ResultAck{Key: key, Epoch: 7, Attempt: 2}, ""},
		{fullHold(), "Task.TaskOffer.Request.GPU.Share"},
		{market.HoldReply{Auction: aid, Bidder: bidder, Replica: 3, OK: true, Reason: "r"}, ""},
		{market.Commit{Key: key, Epoch: 7, Rank: 3, Peers: gangPeers()}, ""},
		{market.Release{Key: key, Epoch: 7}, ""},
		{fullReserve(), "Request.GPU.Share"},
		{fullSteal(), "Room.GPU.Share"},
		{fullTransfer(), ""},
		{market.ManagerQuery{Job: key.Job, From: bidder}, ""},
		{market.ManagerAnswer{Job: key.Job, From: manager, Manages: true}, ""},
		{market.ManagerClaim{Job: key.Job, From: manager, Rank: market.ClaimRank{State: market.JobRunning, Succeeded: 3, Running: 2, TakenFrom: bidder}, Reply: true}, ""},
	}
	kinds := map[string]bool{}
	for _, tc := range tests {
		kinds[market.Kind(tc.msg)] = true
	}
	if len(kinds) != numKinds {
		t.Errorf("fixtures cover %d message kinds, want %d: add a full fixture for the new kind", len(kinds), numKinds)
	}
	for _, tc := range tests {
		var walk func(v reflect.Value, path string)
		walk = func(v reflect.Value, path string) {
			if path == tc.exempt {
				return
			}
			if v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Time{}) {
				for i := range v.NumField() {
					p := v.Type().Field(i).Name
					if path != "" {
						p = path + "." + p
					}
					walk(v.Field(i), p)
				}
				return
			}
			if v.IsZero() {
				t.Errorf("%T fixture leaves %s zero: set it so that the round trip covers it", tc.msg, path)
			}
		}
		walk(reflect.ValueOf(tc.msg), "")
	}
	if s := shareOffer().Request.GPU.Share; s == 0 {
		t.Error("shareOffer must set the GPU share")
	}
}
