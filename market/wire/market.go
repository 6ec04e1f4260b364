package wire

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire/pb"
)

// ErrTooLarge is wrapped by the errors for messages and frames over their
// size limit.
var ErrTooLarge = errors.New("over the size limit")

// marshal is deterministic so that one message always has one encoding.
var marshal = proto.MarshalOptions{Deterministic: true}

// Encode returns the wire form of a market message: a version-1
// pb.Envelope holding it. m must be a market message value (market.CFP,
// not *market.CFP); Encode fails on any other type, on a field that
// breaks a limit Decode enforces, and when the result would exceed
// MaxMessageBytes. Times are sent as Unix nanoseconds, losing their
// location and monotonic reading.
func Encode(m market.Msg) ([]byte, error) {
	if m == nil {
		return nil, errors.New("wire: nil message")
	}
	if err := checkMsg(m); err != nil {
		return nil, err
	}
	env := &pb.Envelope{Version: Version}
	switch x := m.(type) {
	case market.CFP:
		env.Body = &pb.Envelope_Cfp{Cfp: cfpToPB(x)}
	case market.Bid:
		env.Body = &pb.Envelope_Bid{Bid: bidToPB(x)}
	case market.NoBid:
		env.Body = &pb.Envelope_NoBid{NoBid: &pb.NoBid{Auction: auctionToPB(x.Auction), Bidder: string(x.Bidder), Reason: x.Reason, Permanent: x.Permanent, NeedTicket: x.NeedTicket}}
	case market.Award:
		env.Body = &pb.Envelope_Award{Award: &pb.Award{Auction: auctionToPB(x.Auction), Manager: string(x.Manager), Task: specToPB(x.Task), Bid: bidToPB(x.Bid), Last: x.Last, Ticket: x.Ticket, Direct: x.Direct}}
	case market.AwardReply:
		env.Body = &pb.Envelope_AwardReply{AwardReply: &pb.AwardReply{Auction: auctionToPB(x.Auction), Bidder: string(x.Bidder), Accept: x.Accept, Reason: x.Reason, StartUnixNano: timeToPB(x.Start)}}
	case market.TaskStatus:
		env.Body = &pb.Envelope_TaskStatus{TaskStatus: &pb.TaskStatus{
			Key: keyToPB(x.Key), Epoch: x.Epoch, Attempt: int32(x.Attempt), Node: string(x.Node),
			State: string(x.State), ExitCode: int32(x.ExitCode), Reason: x.Reason,
			TimeUnixNano: timeToPB(x.Time), RuntimeNs: int64(x.Runtime), AckWanted: x.AckWanted,
			Outputs: dataRefToPB(x.Outputs),
		}}
	case market.ResultAck:
		env.Body = &pb.Envelope_ResultAck{ResultAck: &pb.ResultAck{Key: keyToPB(x.Key), Epoch: x.Epoch, Attempt: int32(x.Attempt)}}
	case market.CancelTask:
		env.Body = &pb.Envelope_CancelTask{CancelTask: &pb.CancelTask{Key: keyToPB(x.Key), Epoch: x.Epoch, Reason: x.Reason}}
	case market.Hold:
		env.Body = &pb.Envelope_Hold{Hold: &pb.Hold{Auction: auctionToPB(x.Auction), Manager: string(x.Manager), Task: specToPB(x.Task), ExpiresUnixNano: timeToPB(x.Expires), Ticket: x.Ticket}}
	case market.HoldReply:
		env.Body = &pb.Envelope_HoldReply{HoldReply: &pb.HoldReply{Auction: auctionToPB(x.Auction), Bidder: string(x.Bidder), Replica: int32(x.Replica), Ok: x.OK, Reason: x.Reason}}
	case market.Commit:
		env.Body = &pb.Envelope_Commit{Commit: &pb.Commit{Key: keyToPB(x.Key), Epoch: x.Epoch, Rank: int32(x.Rank), Peers: peersToPB(x.Peers)}}
	case market.Release:
		env.Body = &pb.Envelope_Release{Release: &pb.Release{Key: keyToPB(x.Key), Epoch: x.Epoch}}
	case market.Reserve:
		env.Body = &pb.Envelope_Reserve{Reserve: &pb.Reserve{
			Auction: auctionToPB(x.Auction), Manager: string(x.Manager), Request: requestToPB(x.Request),
			Priority: int32(x.Priority), UntilUnixNano: timeToPB(x.Until), SinceUnixNano: timeToPB(x.Since),
		}}
	case market.StealRequest:
		env.Body = &pb.Envelope_StealRequest{StealRequest: &pb.StealRequest{Thief: string(x.Thief), Room: requestToPB(x.Room), Max: int32(x.Max), EndsByUnixNano: timeToPB(x.EndsBy)}}
	case market.Transfer:
		env.Body = &pb.Envelope_Transfer{Transfer: &pb.Transfer{Key: keyToPB(x.Key), Epoch: x.Epoch, From: string(x.From), To: string(x.To)}}
	case market.ManagerQuery:
		env.Body = &pb.Envelope_ManagerQuery{ManagerQuery: &pb.ManagerQuery{Job: x.Job, From: string(x.From)}}
	case market.ManagerAnswer:
		env.Body = &pb.Envelope_ManagerAnswer{ManagerAnswer: &pb.ManagerAnswer{Job: x.Job, From: string(x.From), Manages: x.Manages, Successor: string(x.Successor)}}
	case market.ManagerClaim:
		env.Body = &pb.Envelope_ManagerClaim{ManagerClaim: &pb.ManagerClaim{Job: x.Job, From: string(x.From), State: string(x.Rank.State),
			Succeeded: uint32(x.Rank.Succeeded), Running: uint32(x.Rank.Running), Reply: x.Reply, TakenFrom: string(x.Rank.TakenFrom)}}
	}
	b, err := marshal.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("wire: %s: %w", market.Kind(m), err)
	}
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("wire: %s message of %d bytes: %w of %d bytes", market.Kind(m), len(b), ErrTooLarge, MaxMessageBytes)
	}
	return b, nil
}

// Decode parses and checks the wire form of a market message and returns
// it as the value type Market.Step expects (market.CFP, market.Bid, …).
// It rejects input over MaxMessageBytes, input that is not a protobuf
// Envelope, a version other than Version, an Envelope with no message,
// and any field that breaks its limit; the error names the field.
func Decode(b []byte) (market.Msg, error) {
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("wire: message of %d bytes: %w of %d bytes", len(b), ErrTooLarge, MaxMessageBytes)
	}
	var env pb.Envelope
	if err := proto.Unmarshal(b, &env); err != nil {
		return nil, malformed("envelope", &env, b, err)
	}
	if env.Version != Version {
		return nil, bad("version", "%d not supported (want %d)", env.Version, Version)
	}
	m, err := msgFromPB(&env)
	if err != nil {
		return nil, err
	}
	if err := checkMsg(m); err != nil {
		return nil, err
	}
	return m, nil
}

// msgFromPB converts the body of an envelope, checking that the messages
// a market message needs are present.
func msgFromPB(env *pb.Envelope) (market.Msg, error) {
	switch body := env.Body.(type) {
	case *pb.Envelope_Cfp:
		x, p := body.Cfp, "cfp"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		if x.Task == nil {
			return nil, bad(join(p, "task"), "required")
		}
		o, err := offerFromPB(join(p, "task"), x.Task)
		if err != nil {
			return nil, err
		}
		return market.CFP{Auction: a, Manager: market.NodeID(x.Manager), Task: o, Ticket: x.Ticket}, nil
	case *pb.Envelope_Bid:
		if body.Bid == nil {
			return nil, bad("bid", "empty message")
		}
		return bidFromPB("bid", body.Bid)
	case *pb.Envelope_NoBid:
		x, p := body.NoBid, "no_bid"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		return market.NoBid{Auction: a, Bidder: market.NodeID(x.Bidder), Reason: x.Reason, Permanent: x.Permanent, NeedTicket: x.NeedTicket}, nil
	case *pb.Envelope_Award:
		x, p := body.Award, "award"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		if x.Task == nil {
			return nil, bad(join(p, "task"), "required")
		}
		s, err := specFromPB(join(p, "task"), x.Task)
		if err != nil {
			return nil, err
		}
		if x.Bid == nil {
			return nil, bad(join(p, "bid"), "required")
		}
		bid, err := bidFromPB(join(p, "bid"), x.Bid)
		if err != nil {
			return nil, err
		}
		return market.Award{Auction: a, Manager: market.NodeID(x.Manager), Task: s, Bid: bid, Last: x.Last, Ticket: x.Ticket, Direct: x.Direct}, nil
	case *pb.Envelope_AwardReply:
		x, p := body.AwardReply, "award_reply"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		return market.AwardReply{Auction: a, Bidder: market.NodeID(x.Bidder), Accept: x.Accept, Reason: x.Reason, Start: timeFromPB(x.StartUnixNano)}, nil
	case *pb.Envelope_TaskStatus:
		x, p := body.TaskStatus, "task_status"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		k, err := keyFromPB(join(p, "key"), x.Key)
		if err != nil {
			return nil, err
		}
		outs, err := dataRefFromPB(join(p, "outputs"), x.Outputs)
		if err != nil {
			return nil, err
		}
		return market.TaskStatus{
			Key: k, Epoch: x.Epoch, Attempt: int(x.Attempt), Node: market.NodeID(x.Node),
			State: market.TaskState(x.State), ExitCode: int(x.ExitCode), Reason: x.Reason,
			Time: timeFromPB(x.TimeUnixNano), Runtime: time.Duration(x.RuntimeNs), AckWanted: x.AckWanted,
			Outputs: outs,
		}, nil
	case *pb.Envelope_ResultAck:
		x, p := body.ResultAck, "result_ack"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		k, err := keyFromPB(join(p, "key"), x.Key)
		if err != nil {
			return nil, err
		}
		return market.ResultAck{Key: k, Epoch: x.Epoch, Attempt: int(x.Attempt)}, nil
	case *pb.Envelope_CancelTask:
		x, p := body.CancelTask, "cancel_task"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		k, err := keyFromPB(join(p, "key"), x.Key)
		if err != nil {
			return nil, err
		}
		return market.CancelTask{Key: k, Epoch: x.Epoch, Reason: x.Reason}, nil
	case *pb.Envelope_Hold:
		x, p := body.Hold, "hold"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		if x.Task == nil {
			return nil, bad(join(p, "task"), "required")
		}
		s, err := specFromPB(join(p, "task"), x.Task)
		if err != nil {
			return nil, err
		}
		return market.Hold{Auction: a, Manager: market.NodeID(x.Manager), Task: s, Expires: timeFromPB(x.ExpiresUnixNano), Ticket: x.Ticket}, nil
	case *pb.Envelope_HoldReply:
		x, p := body.HoldReply, "hold_reply"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		return market.HoldReply{Auction: a, Bidder: market.NodeID(x.Bidder), Replica: int(x.Replica), OK: x.Ok, Reason: x.Reason}, nil
	case *pb.Envelope_Commit:
		x, p := body.Commit, "commit"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		k, err := keyFromPB(join(p, "key"), x.Key)
		if err != nil {
			return nil, err
		}
		peers, err := peersFromPB(join(p, "peers"), x.Peers)
		if err != nil {
			return nil, err
		}
		return market.Commit{Key: k, Epoch: x.Epoch, Rank: int(x.Rank), Peers: peers}, nil
	case *pb.Envelope_Release:
		x, p := body.Release, "release"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		k, err := keyFromPB(join(p, "key"), x.Key)
		if err != nil {
			return nil, err
		}
		return market.Release{Key: k, Epoch: x.Epoch}, nil
	case *pb.Envelope_Reserve:
		x, p := body.Reserve, "reserve"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		a, err := auctionFromPB(join(p, "auction"), x.Auction)
		if err != nil {
			return nil, err
		}
		r, err := requestFromPB(join(p, "request"), x.Request)
		if err != nil {
			return nil, err
		}
		return market.Reserve{
			Auction: a, Manager: market.NodeID(x.Manager), Request: r,
			Priority: int(x.Priority), Until: timeFromPB(x.UntilUnixNano), Since: timeFromPB(x.SinceUnixNano),
		}, nil
	case *pb.Envelope_StealRequest:
		x, p := body.StealRequest, "steal_request"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		r, err := requestFromPB(join(p, "room"), x.Room)
		if err != nil {
			return nil, err
		}
		return market.StealRequest{Thief: market.NodeID(x.Thief), Room: r, Max: int(x.Max), EndsBy: timeFromPB(x.EndsByUnixNano)}, nil
	case *pb.Envelope_Transfer:
		x, p := body.Transfer, "transfer"
		if x == nil {
			return nil, bad(p, "empty message")
		}
		k, err := keyFromPB(join(p, "key"), x.Key)
		if err != nil {
			return nil, err
		}
		return market.Transfer{Key: k, Epoch: x.Epoch, From: market.NodeID(x.From), To: market.NodeID(x.To)}, nil
	case *pb.Envelope_ManagerQuery:
		if body.ManagerQuery == nil {
			return nil, bad("manager_query", "empty message")
		}
		return market.ManagerQuery{Job: body.ManagerQuery.Job, From: market.NodeID(body.ManagerQuery.From)}, nil
	case *pb.Envelope_ManagerAnswer:
		x := body.ManagerAnswer
		if x == nil {
			return nil, bad("manager_answer", "empty message")
		}
		return market.ManagerAnswer{Job: x.Job, From: market.NodeID(x.From), Manages: x.Manages, Successor: market.NodeID(x.Successor)}, nil
	case *pb.Envelope_ManagerClaim:
		x := body.ManagerClaim
		if x == nil {
			return nil, bad("manager_claim", "empty message")
		}
		if x.Succeeded > spec.MaxJobReplicas || x.Running > spec.MaxJobReplicas {
			return nil, bad("manager_claim.succeeded", "%d succeeded and %d running: more than a job's %d replicas", x.Succeeded, x.Running, spec.MaxJobReplicas)
		}
		return market.ManagerClaim{Job: x.Job, From: market.NodeID(x.From), Reply: x.Reply,
			Rank: market.ClaimRank{State: market.JobState(x.State), Succeeded: int(x.Succeeded), Running: int(x.Running), TakenFrom: market.NodeID(x.TakenFrom)}}, nil
	case nil:
		return nil, bad("body", "required: the envelope holds no message")
	}
	return nil, bad("body", "unknown message type %T", env.Body)
}

// timeToPB renders a time as Unix nanoseconds, the zero time as 0.
func timeToPB(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeFromPB is the inverse of timeToPB; set times come back in UTC.
func timeFromPB(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func keyToPB(k market.TaskKey) *pb.TaskKey {
	return &pb.TaskKey{Job: k.Job, Task: k.Task, Replica: int32(k.Replica)}
}

func keyFromPB(p string, k *pb.TaskKey) (market.TaskKey, error) {
	if k == nil {
		return market.TaskKey{}, bad(p, "required")
	}
	return market.TaskKey{Job: k.Job, Task: k.Task, Replica: int(k.Replica)}, nil
}

func auctionToPB(a market.AuctionID) *pb.AuctionID {
	return &pb.AuctionID{Key: keyToPB(a.Key), Epoch: a.Epoch, Round: int32(a.Round)}
}

func auctionFromPB(p string, a *pb.AuctionID) (market.AuctionID, error) {
	if a == nil {
		return market.AuctionID{}, bad(p, "required")
	}
	k, err := keyFromPB(join(p, "key"), a.Key)
	if err != nil {
		return market.AuctionID{}, err
	}
	return market.AuctionID{Key: k, Epoch: a.Epoch, Round: int(a.Round)}, nil
}

func peersToPB(peers []market.NodeID) []string {
	if len(peers) == 0 {
		return nil
	}
	out := make([]string, len(peers))
	for i, id := range peers {
		out[i] = string(id)
	}
	return out
}

// peersFromPB converts a gang's peer list, nil when empty. It checks the
// count first, so that a hostile message cannot make us convert more than
// the limit.
func peersFromPB(p string, peers []string) ([]market.NodeID, error) {
	if len(peers) > MaxPeers {
		return nil, bad(p, "%d node IDs, over the limit of %d", len(peers), MaxPeers)
	}
	if len(peers) == 0 {
		return nil, nil
	}
	out := make([]market.NodeID, len(peers))
	for i, id := range peers {
		out[i] = market.NodeID(id)
	}
	return out, nil
}

func requestToPB(r resource.Request) *pb.Request {
	out := &pb.Request{CpuMilli: r.CPU, Memory: r.Memory, Disk: r.Disk, Labels: r.Labels, Site: r.Site, Limits: uint32(r.Limits)}
	if r.GPU != (resource.GPURequest{}) {
		out.Gpu = &pb.GPURequest{Count: int32(r.GPU.Count), ShareMilli: r.GPU.Share, Memory: r.GPU.Memory, Model: r.GPU.Model}
	}
	for _, d := range r.Devices {
		out.Devices = append(out.Devices, &pb.DeviceRequest{Kind: d.Kind, Model: d.Model, Count: int32(d.Count)})
	}
	return out
}

func requestFromPB(p string, r *pb.Request) (resource.Request, error) {
	if r == nil {
		return resource.Request{}, nil
	}
	// Check the count before building the slice, so that a hostile
	// message cannot make us convert more than the limit.
	if len(r.Devices) > MaxDevices {
		return resource.Request{}, bad(join(p, "devices"), "%d device requests, over the limit of %d", len(r.Devices), MaxDevices)
	}
	if r.Limits&^uint32(resource.TaskLimits) != 0 {
		return resource.Request{}, bad(join(p, "limits"), "unknown limit bits %#x", r.Limits&^uint32(resource.TaskLimits))
	}
	out := resource.Request{CPU: r.CpuMilli, Memory: r.Memory, Disk: r.Disk, Site: r.Site, Limits: resource.Limits(r.Limits)}
	if g := r.Gpu; g != nil {
		out.GPU = resource.GPURequest{Count: int(g.Count), Share: g.ShareMilli, Memory: g.Memory, Model: g.Model}
	}
	for i, d := range r.Devices {
		if d == nil {
			return resource.Request{}, bad(index(join(p, "devices"), i), "empty")
		}
		out.Devices = append(out.Devices, resource.DeviceRequest{Kind: d.Kind, Model: d.Model, Count: int(d.Count)})
	}
	if len(r.Labels) > 0 {
		out.Labels = r.Labels
	}
	return out, nil
}

func offerToPB(o market.TaskOffer) *pb.TaskOffer {
	return &pb.TaskOffer{
		Key: keyToPB(o.Key), Type: o.Type, Priority: int32(o.Priority),
		DeadlineUnixNano: timeToPB(o.Deadline), EstimateNs: int64(o.Estimate),
		Request: requestToPB(o.Request), GangSize: int32(o.GangSize), Pack: o.Pack,
		Inputs: dataRefsToPB(o.Inputs),
	}
}

func offerFromPB(p string, o *pb.TaskOffer) (market.TaskOffer, error) {
	k, err := keyFromPB(join(p, "key"), o.Key)
	if err != nil {
		return market.TaskOffer{}, err
	}
	r, err := requestFromPB(join(p, "request"), o.Request)
	if err != nil {
		return market.TaskOffer{}, err
	}
	in, err := dataRefsFromPB(join(p, "inputs"), o.Inputs)
	if err != nil {
		return market.TaskOffer{}, err
	}
	return market.TaskOffer{
		Key: k, Type: o.Type, Priority: int(o.Priority),
		Deadline: timeFromPB(o.DeadlineUnixNano), Estimate: time.Duration(o.EstimateNs),
		Request: r, GangSize: int(o.GangSize), Pack: o.Pack, Inputs: in,
	}, nil
}

func specToPB(s market.TaskSpec) *pb.TaskSpec {
	return &pb.TaskSpec{
		Offer: offerToPB(s.TaskOffer), Command: s.Command, Env: s.Env,
		TimeoutNs: int64(s.Timeout), CheckpointIntervalNs: int64(s.CheckpointInterval),
		Epoch: s.Epoch, Attempt: int32(s.Attempt),
		Rank: int32(s.Rank), Peers: peersToPB(s.Peers),
		Owner: s.Owner, Previous: placementsToPB(s.Previous),
		Inputs: inputsToPB(s.Inputs), Outputs: outputsToPB(s.Outputs),
	}
}

func placementsToPB(ps []market.Placement) []*pb.Placement {
	var out []*pb.Placement
	for _, p := range ps {
		out = append(out, &pb.Placement{Epoch: p.Epoch, Node: string(p.Node)})
	}
	return out
}

func placementsFromPB(ps []*pb.Placement) []market.Placement {
	var out []market.Placement
	for _, p := range ps {
		if p != nil {
			out = append(out, market.Placement{Epoch: p.Epoch, Node: market.NodeID(p.Node)})
		}
	}
	return out
}

func specFromPB(p string, s *pb.TaskSpec) (market.TaskSpec, error) {
	if s.Offer == nil {
		return market.TaskSpec{}, bad(join(p, "offer"), "required")
	}
	o, err := offerFromPB(join(p, "offer"), s.Offer)
	if err != nil {
		return market.TaskSpec{}, err
	}
	peers, err := peersFromPB(join(p, "peers"), s.Peers)
	if err != nil {
		return market.TaskSpec{}, err
	}
	inputs, err := inputsFromPB(join(p, "inputs"), s.Inputs)
	if err != nil {
		return market.TaskSpec{}, err
	}
	outputs, err := outputsFromPB(join(p, "outputs"), s.Outputs)
	if err != nil {
		return market.TaskSpec{}, err
	}
	out := market.TaskSpec{
		TaskOffer: o, Command: s.Command,
		Timeout: time.Duration(s.TimeoutNs), CheckpointInterval: time.Duration(s.CheckpointIntervalNs),
		Epoch: s.Epoch, Attempt: int(s.Attempt), Rank: int(s.Rank), Peers: peers,
		Owner: s.Owner, Previous: placementsFromPB(s.Previous),
		Inputs: inputs, Outputs: outputs,
	}
	if len(s.Env) > 0 {
		out.Env = s.Env
	}
	return out, nil
}

func cfpToPB(c market.CFP) *pb.Cfp {
	return &pb.Cfp{Auction: auctionToPB(c.Auction), Manager: string(c.Manager), Task: offerToPB(c.Task), Ticket: c.Ticket}
}

func bidToPB(b market.Bid) *pb.Bid {
	return &pb.Bid{
		Auction: auctionToPB(b.Auction), Bidder: string(b.Bidder), Score: b.Score,
		StartUnixNano: timeToPB(b.Start), FinishUnixNano: timeToPB(b.Finish),
		RuntimeNs: int64(b.Runtime), Preempt: b.Preempt, Slots: int32(b.Slots),
	}
}

func bidFromPB(p string, b *pb.Bid) (market.Bid, error) {
	a, err := auctionFromPB(join(p, "auction"), b.Auction)
	if err != nil {
		return market.Bid{}, err
	}
	return market.Bid{
		Auction: a, Bidder: market.NodeID(b.Bidder), Score: b.Score,
		Start: timeFromPB(b.StartUnixNano), Finish: timeFromPB(b.FinishUnixNano),
		Runtime: time.Duration(b.RuntimeNs), Preempt: b.Preempt, Slots: int(b.Slots),
	}, nil
}
