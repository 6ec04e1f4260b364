package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agora-sched/agora/market"
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
	body, ok := bodies[reflect.TypeOf(m)]
	if !ok {
		return nil, fmt.Errorf("wire: unsupported message type %T", m)
	}
	env := &pb.Envelope{Version: Version}
	r := env.ProtoReflect()
	if err := toPB(string(body.Name()), reflect.ValueOf(m), r.Mutable(body).Message()); err != nil {
		return nil, err
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

// messages are the market's messages, each carried in the Envelope's
// body field whose message type has its name (CFP in cfp, of type Cfp).
var messages = []market.Msg{
	market.CFP{}, market.Bid{}, market.NoBid{}, market.Award{}, market.AwardReply{},
	market.TaskStatus{}, market.ResultAck{}, market.CancelTask{},
	market.Hold{}, market.HoldReply{}, market.Commit{}, market.Release{}, market.Reserve{},
	market.StealRequest{}, market.Transfer{},
	market.ManagerQuery{}, market.ManagerAnswer{}, market.ManagerClaim{},
}

var (
	bodyOneof = (&pb.Envelope{}).ProtoReflect().Descriptor().Oneofs().ByName("body")
	// bodies is the Envelope field of each message type, kinds the
	// message type of each field.
	bodies = map[reflect.Type]protoreflect.FieldDescriptor{}
	kinds  = map[protoreflect.Name]reflect.Type{}
)

func init() {
	fds := bodyOneof.Fields()
	for _, m := range messages {
		t := reflect.TypeOf(m)
		for i := range fds.Len() {
			if fd := fds.Get(i); strings.EqualFold(string(fd.Message().Name()), t.Name()) {
				bodies[t], kinds[fd.Name()] = fd, t
			}
		}
		if _, ok := bodies[t]; !ok {
			panic(fmt.Sprintf("wire: market.%s has no field in pb.Envelope", t.Name()))
		}
	}
	if len(kinds) != fds.Len() {
		panic("wire: pb.Envelope has a body field no market message maps to")
	}
	for t, fd := range bodies {
		addPlans(t, fd.Message())
	}
	addPlans(reflect.TypeOf(Query{}), (&pb.Query{}).ProtoReflect().Descriptor())
	addPlans(reflect.TypeOf(QueryReply{}), (&pb.QueryReply{}).ProtoReflect().Descriptor())
	addPlans(reflect.TypeOf(market.JobRecord{}), (&pb.JobRecord{}).ProtoReflect().Descriptor())
}

// msgFromPB converts the body of an envelope to its market message.
func msgFromPB(env *pb.Envelope) (market.Msg, error) {
	r := env.ProtoReflect()
	fd := r.WhichOneof(bodyOneof)
	if fd == nil {
		return nil, bad("body", "required: the envelope holds no message")
	}
	v := reflect.New(kinds[fd.Name()]).Elem()
	if err := fromPB(string(fd.Name()), r.Get(fd).Message(), v); err != nil {
		return nil, err
	}
	return v.Interface().(market.Msg), nil
}
