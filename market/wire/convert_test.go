package wire

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agora-sched/agora/market/wire/pb"
)

// fill sets every field reachable from v to a value other than its zero,
// so that a field the conversion drops or misplaces shows.
func fill(v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Unix(1700000000, int64(*n)).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n%100 + 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n%100 + 1))
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{byte(*n)})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), n)
		fill(s.Index(1), n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}

// TestEveryMessageMaps carries every market message, the query and the
// reply, each field set, through the conversion and the protobuf bytes
// and back: every Go field maps to a proto field (or the plan panics)
// and comes back as it went.
func TestEveryMessageMaps(t *testing.T) {
	type pair struct {
		v  any
		pb proto.Message
	}
	var pairs []pair
	for _, m := range messages {
		body := bodies[reflect.TypeOf(m)]
		env := &pb.Envelope{}
		pairs = append(pairs, pair{m, env.ProtoReflect().Mutable(body).Message().Interface()})
	}
	pairs = append(pairs, pair{Query{}, &pb.Query{}}, pair{QueryReply{}, &pb.QueryReply{}})
	for _, p := range pairs {
		name := reflect.TypeOf(p.v).Name()
		in := reflect.New(reflect.TypeOf(p.v)).Elem()
		n := 0
		fill(in, &n)
		if err := toPB(name, in, p.pb.ProtoReflect()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := proto.Marshal(p.pb)
		if err != nil {
			t.Fatal(err)
		}
		back := p.pb.ProtoReflect().New()
		if err := proto.Unmarshal(b, back.Interface()); err != nil {
			t.Fatal(err)
		}
		out := reflect.New(in.Type()).Elem()
		if err := fromPB(name, back, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(in.Interface(), out.Interface()) {
			t.Errorf("%s changed on the way:\n in  %+v\n out %+v", name, in.Interface(), out.Interface())
		}
	}
}

// TestPlanRefusesAnUnmappedField: a Go field with no proto field (and a
// proto field with no Go field) is a programming error the first use
// reports.
func TestPlanRefusesAnUnmappedField(t *testing.T) {
	md := (&pb.ResultAck{}).ProtoReflect().Descriptor()
	type extra struct {
		Key struct {
			Job, Task string
			Replica   int
		}
		Epoch   uint64
		Attempt int
		Added   string
	}
	type missing struct {
		Key struct {
			Job, Task string
			Replica   int
		}
		Epoch uint64
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(extra{}), reflect.TypeOf(missing{})} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for a field on one side only", typ)
				}
			}()
			buildPlan(typ, md)
		}()
	}
}
