package wire

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The one mapping between the market's Go types and the protobuf messages
// of market.proto, worked out from the two definitions instead of written
// per field: adding a field to a message is adding it to the .proto and
// to the Go type, with the same name. A proto field matches the Go field
//
//   - whose JSON name (its json tag, else its name in snake case) is the
//     proto field's name; a time.Time field's proto name adds "_unix_nano"
//     (Unix nanoseconds, 0 for the zero time, read back in UTC), and a
//     time.Duration is nanoseconds;
//   - or, for a message field, the embedded Go struct of the message's
//     type (TaskSpec.offer is TaskSpec's embedded TaskOffer);
//   - or a field of a Go struct field that has no proto field of its own
//     (ManagerClaim's Rank is flattened into ManagerClaim).
//
// Every exported Go field must match a proto field (but those tagged
// pb:"-", never stored or sent) and every proto field a Go field (but a
// top-level message's version and checksum, which the caller sets and
// checks (seal.go), and the
// fields a hook converts by hand, byHand); a mismatch panics when the pair is first used, and
// TestEveryMessageMaps uses every pair. Repeated and map fields come back
// nil when empty; integers that do not fit the Go type are refused. A
// message field is required, except for the types in mayBeAbsent, which
// are left out when zero and read back as zero when absent.

// byHand are the proto fields a message's hook (hooks) converts, each
// with the Go field it fills ("" for none).
var byHand = map[protoreflect.FullName]string{
	"agora.v1.JobRecord.spec":            "Spec",
	"agora.v1.JobRecord.ticket":          "Ticket",
	"agora.v1.JobRecord.ticket_detached": "",
}

// hook converts what the mapping cannot for one message type, after the
// mapped fields.
type hook struct {
	to   func(path string, v reflect.Value, m protoreflect.Message) error
	from func(path string, m protoreflect.Message, v reflect.Value) error
}

// hooks are the messages with fields converted by hand (record.go).
var hooks = map[protoreflect.FullName]hook{}

// generated are the conversions convert_gen.go writes out, per pair of
// types (gen_test.go writes it from the mapping): toPB and fromPB hand a
// pair to its generated code when there is one, and work the mapping out
// themselves otherwise (a pair added since, or convert_gen.go removed to
// be written again). useGenerated is false only in the test that holds
// the two to each other.
var (
	generated    = map[planKey]hook{}
	useGenerated = true
)

// mayBeAbsent are the messages whose absence means their zero value.
var mayBeAbsent = map[protoreflect.FullName]bool{
	"agora.v1.Request":    true, // an all-zero request
	"agora.v1.GPURequest": true, // no GPUs
}

var (
	timeType     = reflect.TypeOf(time.Time{})
	durationType = reflect.TypeOf(time.Duration(0))
)

// fieldMap is how one proto field maps to a Go field.
type fieldMap struct {
	fd    protoreflect.FieldDescriptor
	index []int // the Go field, by reflect.Value.FieldByIndex
}

type planKey struct {
	t  reflect.Type
	md protoreflect.FullName
}

// plans are the mappings of the package's own pairs (roots), worked out
// once at init and read-only after, so that any goroutine may encode; a
// pair from elsewhere (a stored copy's) is worked out at each use.
var plans = map[planKey][]fieldMap{}

// planFor maps the fields of Go struct type t to those of md.
func planFor(t reflect.Type, md protoreflect.MessageDescriptor) []fieldMap {
	if p, ok := plans[planKey{t, md.FullName()}]; ok {
		return p
	}
	return buildPlan(t, md)
}

// addPlans works out the plans of t and md and of the pairs they reach.
func addPlans(t reflect.Type, md protoreflect.MessageDescriptor) {
	k := planKey{t, md.FullName()}
	if _, ok := plans[k]; ok {
		return
	}
	p := buildPlan(t, md)
	plans[k] = p
	for _, f := range p {
		if f.fd.Kind() == protoreflect.MessageKind && !f.fd.IsMap() {
			et := t.FieldByIndex(f.index).Type
			if et.Kind() == reflect.Slice || et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			addPlans(et, f.fd.Message())
		}
	}
}

func buildPlan(t reflect.Type, md protoreflect.MessageDescriptor) []fieldMap {
	used := map[string]bool{}
	var out []fieldMap
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if (fd.Name() == "version" || fd.Name() == "checksum") && fd.ContainingMessage().Parent() == fd.ContainingMessage().ParentFile() {
			continue // the framing's (Envelope, Query, QueryReply, a record): the caller's
		}
		if goName, ok := byHand[fd.FullName()]; ok {
			if f, ok := t.FieldByName(goName); ok {
				used[fmt.Sprint(f.Index[:1])] = true
			}
			continue
		}
		idx, ok := goField(t, fd)
		if !ok {
			panic(fmt.Sprintf("wire: %s.%s has no field in Go type %s", md.FullName(), fd.Name(), t))
		}
		used[fmt.Sprint(idx[:1])] = true
		out = append(out, fieldMap{fd, idx})
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && f.Tag.Get("pb") != "-" && !used[fmt.Sprint([]int{i})] {
			panic(fmt.Sprintf("wire: Go field %s.%s has no field in %s", t, f.Name, md.FullName()))
		}
	}
	return out
}

// goField finds the Go field of struct type t that proto field fd maps
// to.
func goField(t reflect.Type, fd protoreflect.FieldDescriptor) ([]int, bool) {
	name := string(fd.Name())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("pb") == "-" {
			continue
		}
		switch n := jsonName(f); {
		case f.Anonymous && fd.Kind() == protoreflect.MessageKind && strings.EqualFold(f.Type.Name(), string(fd.Message().Name())):
			return []int{i}, true
		case f.Anonymous:
		case n == name && f.Type != timeType:
			return []int{i}, true
		case n+"_unix_nano" == name && f.Type == timeType:
			return []int{i}, true
		}
	}
	// Flattened: a struct field with no proto field of its own.
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous || f.Type.Kind() != reflect.Struct || f.Type == timeType {
			continue
		}
		if fd.ContainingMessage().Fields().ByName(protoreflect.Name(jsonName(f))) != nil {
			continue
		}
		if sub, ok := goField(f.Type, fd); ok {
			return append([]int{i}, sub...), true
		}
	}
	return nil, false
}

// jsonName is a Go field's name in its json tag, else its name in snake
// case.
func jsonName(f reflect.StructField) string {
	if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" {
		return n
	}
	var b strings.Builder
	rs := []rune(f.Name)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// toPB writes Go struct v into m.
func toPB(path string, v reflect.Value, m protoreflect.Message) error {
	if g, ok := generated[planKey{v.Type(), m.Descriptor().FullName()}]; ok && useGenerated {
		return g.to(path, v, m)
	}
	for _, f := range planFor(v.Type(), m.Descriptor()) {
		gv := v.FieldByIndex(f.index)
		switch {
		case f.fd.IsMap():
			if gv.Len() == 0 {
				continue
			}
			mp := m.Mutable(f.fd).Map()
			it := gv.MapRange()
			for it.Next() {
				mp.Set(protoreflect.ValueOfString(it.Key().String()).MapKey(), protoreflect.ValueOfString(it.Value().String()))
			}
		case f.fd.IsList():
			if gv.Len() == 0 {
				continue
			}
			l := m.Mutable(f.fd).List()
			p := join(path, string(f.fd.Name()))
			for i := range gv.Len() {
				ev := gv.Index(i)
				if f.fd.Kind() == protoreflect.MessageKind {
					e := l.NewElement()
					if err := toPB(index(p, i), ev, e.Message()); err != nil {
						return err
					}
					l.Append(e)
					continue
				}
				pv, err := scalarToPB(p, f.fd, ev)
				if err != nil {
					return err
				}
				l.Append(pv)
			}
		case f.fd.Kind() == protoreflect.MessageKind:
			if gv.Kind() == reflect.Pointer {
				if gv.IsNil() {
					continue
				}
				gv = gv.Elem()
			} else if mayBeAbsent[f.fd.Message().FullName()] && gv.IsZero() {
				continue
			}
			if err := toPB(join(path, string(f.fd.Name())), gv, m.Mutable(f.fd).Message()); err != nil {
				return err
			}
		default:
			pv, err := scalarToPB(path, f.fd, gv)
			if err != nil {
				return err
			}
			m.Set(f.fd, pv)
		}
	}
	if h, ok := hooks[m.Descriptor().FullName()]; ok {
		return h.to(path, v, m)
	}
	return nil
}

// fromPB reads m into Go struct v (settable).
func fromPB(path string, m protoreflect.Message, v reflect.Value) error {
	if g, ok := generated[planKey{v.Type(), m.Descriptor().FullName()}]; ok && useGenerated {
		return g.from(path, m, v)
	}
	for _, f := range planFor(v.Type(), m.Descriptor()) {
		gv := v.FieldByIndex(f.index)
		switch {
		case f.fd.IsMap():
			mp := m.Get(f.fd).Map()
			if mp.Len() == 0 {
				continue
			}
			out := reflect.MakeMapWithSize(gv.Type(), mp.Len())
			mp.Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
				out.SetMapIndex(reflect.ValueOf(k.String()).Convert(gv.Type().Key()), reflect.ValueOf(val.String()).Convert(gv.Type().Elem()))
				return true
			})
			gv.Set(out)
		case f.fd.IsList():
			l := m.Get(f.fd).List()
			if l.Len() == 0 {
				continue
			}
			out := reflect.MakeSlice(gv.Type(), l.Len(), l.Len())
			p := join(path, string(f.fd.Name()))
			for i := range l.Len() {
				if f.fd.Kind() == protoreflect.MessageKind {
					if err := fromPB(index(p, i), l.Get(i).Message(), out.Index(i)); err != nil {
						return err
					}
					continue
				}
				if err := scalarFromPB(path, f.fd, l.Get(i), out.Index(i)); err != nil {
					return err
				}
			}
			gv.Set(out)
		case f.fd.Kind() == protoreflect.MessageKind:
			if !m.Has(f.fd) {
				if gv.Kind() == reflect.Pointer || mayBeAbsent[f.fd.Message().FullName()] {
					continue
				}
				return bad(join(path, string(f.fd.Name())), "required")
			}
			if gv.Kind() == reflect.Pointer {
				gv.Set(reflect.New(gv.Type().Elem()))
				gv = gv.Elem()
			}
			if err := fromPB(join(path, string(f.fd.Name())), m.Get(f.fd).Message(), gv); err != nil {
				return err
			}
		default:
			if err := scalarFromPB(path, f.fd, m.Get(f.fd), gv); err != nil {
				return err
			}
		}
	}
	if h, ok := hooks[m.Descriptor().FullName()]; ok {
		return h.from(path, m, v)
	}
	return nil
}

// scalarToPB converts a Go scalar to the proto value of fd's kind; path
// is the message's.
func scalarToPB(path string, fd protoreflect.FieldDescriptor, v reflect.Value) (protoreflect.Value, error) {
	p := func() string { return join(path, string(fd.Name())) }
	if v.Type() == timeType {
		n, err := timeToPB(path, string(fd.Name()), v.Interface().(time.Time))
		return protoreflect.ValueOfInt64(n), err
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(v.String()), nil
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(v.Bytes()), nil
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(v.Bool()), nil
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(v.Float()), nil
	}
	var n int64
	var u uint64
	switch {
	case v.CanInt():
		n = v.Int()
		u = uint64(n)
		if n < 0 && isUnsigned(fd) {
			return protoreflect.Value{}, bad(p(), "%d: negative", n)
		}
	case v.CanUint():
		u = v.Uint()
		n = int64(u)
		if u > math.MaxInt64 && !isUnsigned(fd) {
			return protoreflect.Value{}, bad(p(), "%d: out of range", u)
		}
	default:
		panic(fmt.Sprintf("wire: %s: no proto form for Go %s", p(), v.Type()))
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return protoreflect.Value{}, bad(p(), "%d: out of range", n)
		}
		return protoreflect.ValueOfInt32(int32(n)), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if u > math.MaxUint32 {
			return protoreflect.Value{}, bad(p(), "%d: out of range", u)
		}
		return protoreflect.ValueOfUint32(uint32(u)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(u), nil
	}
	panic(fmt.Sprintf("wire: %s: no Go form for proto %s", p(), fd.Kind()))
}

func isUnsigned(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return true
	}
	return false
}

// scalarFromPB sets Go scalar v from proto value pv of fd's kind,
// refusing an integer the Go type cannot hold; path is the message's.
func scalarFromPB(path string, fd protoreflect.FieldDescriptor, pv protoreflect.Value, v reflect.Value) error {
	p := func() string { return join(path, string(fd.Name())) }
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(timeFromPB(pv.Int())))
		return nil
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		v.SetString(pv.String())
		return nil
	case protoreflect.BytesKind:
		if b := pv.Bytes(); len(b) > 0 {
			v.SetBytes(b)
		}
		return nil
	case protoreflect.BoolKind:
		v.SetBool(pv.Bool())
		return nil
	case protoreflect.DoubleKind:
		v.SetFloat(pv.Float())
		return nil
	}
	if isUnsigned(fd) {
		u := pv.Uint()
		switch {
		case v.CanUint() && !v.OverflowUint(u):
			v.SetUint(u)
		case v.CanInt() && u <= math.MaxInt64 && !v.OverflowInt(int64(u)):
			v.SetInt(int64(u))
		default:
			return bad(p(), "%d: out of range", u)
		}
		return nil
	}
	n := pv.Int()
	switch {
	case v.CanInt() && !v.OverflowInt(n):
		v.SetInt(n)
	case v.CanUint() && n >= 0 && !v.OverflowUint(uint64(n)):
		v.SetUint(uint64(n))
	default:
		return bad(p(), "%d: out of range", n)
	}
	return nil
}

// ToProto writes Go struct v (a value or a pointer to one) into m by the
// mapping; errors name the field from path.
func ToProto(path string, v any, m proto.Message) error {
	return toPB(path, reflect.Indirect(reflect.ValueOf(v)), m.ProtoReflect())
}

// FromProto reads m into the Go struct v points to by the mapping.
func FromProto(path string, m proto.Message, v any) error {
	return fromPB(path, m.ProtoReflect(), reflect.ValueOf(v).Elem())
}

// timeToPB is a time as Unix nanoseconds, 0 for the zero time; one they
// cannot hold is refused (field name of message path p).
func timeToPB(p, name string, t time.Time) (int64, error) {
	switch {
	case t.IsZero():
		return 0, nil
	case t.Before(minTime) || t.After(maxTime):
		return 0, bad(join(p, name), "%s: not between the Unix epoch and 2262, what Unix nanoseconds hold", t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// timeFromPB is the inverse of timeToPB; set times come back in UTC.
func timeFromPB(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
