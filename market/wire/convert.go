package wire

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

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
// Every exported Go field must match a proto field and every proto field
// a Go field (but a top-level message's version, which the caller sets
// and checks); a mismatch panics when the pair is first used, and
// TestEveryMessageMaps uses every pair. Repeated and map fields come back
// nil when empty; integers that do not fit the Go type are refused. A
// message field is required, except for the types in mayBeAbsent, which
// are left out when zero and read back as zero when absent.

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

var plans sync.Map // planKey -> []fieldMap

// planFor maps the fields of Go struct type t to those of md.
func planFor(t reflect.Type, md protoreflect.MessageDescriptor) []fieldMap {
	k := planKey{t, md.FullName()}
	if p, ok := plans.Load(k); ok {
		return p.([]fieldMap)
	}
	p := buildPlan(t, md)
	plans.Store(k, p)
	return p
}

func buildPlan(t reflect.Type, md protoreflect.MessageDescriptor) []fieldMap {
	used := map[string]bool{}
	var out []fieldMap
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.Name() == "version" && fd.ContainingMessage().Parent() == fd.ContainingMessage().ParentFile() {
			continue // the framing's (Envelope, Query, QueryReply): the caller's
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
		if f.IsExported() && f.Tag.Get("json") != "-" && !used[fmt.Sprint([]int{i})] {
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
		if !f.IsExported() {
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
	return nil
}

// fromPB reads m into Go struct v (settable).
func fromPB(path string, m protoreflect.Message, v reflect.Value) error {
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
	return nil
}

// scalarToPB converts a Go scalar to the proto value of fd's kind; path
// is the message's.
func scalarToPB(path string, fd protoreflect.FieldDescriptor, v reflect.Value) (protoreflect.Value, error) {
	p := func() string { return join(path, string(fd.Name())) }
	if v.Type() == timeType {
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return protoreflect.ValueOfInt64(0), nil
		}
		return protoreflect.ValueOfInt64(t.UnixNano()), nil
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
		if n := pv.Int(); n != 0 {
			v.Set(reflect.ValueOf(time.Unix(0, n).UTC()))
		}
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
