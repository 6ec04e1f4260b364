package wire

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// malformed wraps an unmarshal error of input b decoded as m, naming the
// first field at fault when it can be found: "wire: malformed envelope:
// cfp.task.type: invalid UTF-8".
func malformed(what string, m proto.Message, b []byte, err error) error {
	if field, why := locate(m.ProtoReflect().Descriptor(), b, ""); field != "" {
		return fmt.Errorf("wire: malformed %s: %s: %s (%w)", what, field, why, err)
	}
	return fmt.Errorf("wire: malformed %s: %w", what, err)
}

// locate walks b as an encoding of md and returns the path of the first
// field whose encoding is at fault and what is wrong with it, or "" if it
// finds nothing wrong. It is used only after Unmarshal failed, to name
// the field in the error.
func locate(md protoreflect.MessageDescriptor, b []byte, path string) (string, string) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return where(path), "bad field tag: " + protowire.ParseError(n).Error()
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		fp := where(path)
		if fd != nil {
			fp = subpath(path, string(fd.Name()))
		}
		if fd != nil && typ == protowire.BytesType && (fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.MessageKind) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fp, protowire.ParseError(n).Error()
			}
			if fd.Kind() == protoreflect.StringKind && !utf8.Valid(v) {
				return fp, "invalid UTF-8"
			}
			if fd.Kind() == protoreflect.MessageKind {
				if p, why := locate(fd.Message(), v, fp); p != "" {
					return p, why
				}
			}
			b = b[n:]
			continue
		}
		if fd != nil && !wireTypeFits(fd, typ) {
			return fp, fmt.Sprintf("wrong wire type %d", typ)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fp, protowire.ParseError(n).Error()
		}
		b = b[n:]
	}
	return "", ""
}

// where names the message at path, the envelope itself when path is "".
func where(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

func subpath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// wireTypeFits reports whether typ is a valid wire type for fd.
func wireTypeFits(fd protoreflect.FieldDescriptor, typ protowire.Type) bool {
	if fd.IsList() && typ == protowire.BytesType {
		return true // packed
	}
	switch fd.Kind() {
	case protoreflect.BoolKind, protoreflect.EnumKind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return typ == protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return typ == protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return typ == protowire.Fixed64Type
	case protoreflect.GroupKind:
		return typ == protowire.StartGroupType
	}
	return typ == protowire.BytesType
}
