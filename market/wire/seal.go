package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Sealed messages: what a node stores (job records, copies of other
// managers' records) ends with a fixed32 field "checksum", the CRC-32C of
// every byte before it. A protobuf message cut at a field boundary still
// parses, with fields missing; a sealed one cut anywhere, or damaged, is
// refused instead of read back with fewer tasks.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSeal is wrapped by the errors for a missing or wrong checksum.
var errSeal = errors.New("checksum does not match: cut short or damaged")

// sealed marshals m and appends its checksum field.
func sealed(m proto.Message) ([]byte, error) {
	b, err := marshal.Marshal(m)
	if err != nil {
		return nil, err
	}
	fd := m.ProtoReflect().Descriptor().Fields().ByName("checksum")
	b = protowire.AppendTag(b, fd.Number(), protowire.Fixed32Type)
	return protowire.AppendFixed32(b, crc32.Checksum(b[:len(b)-protowire.SizeTag(fd.Number())], castagnoli)), nil
}

// unseal checks b's checksum field, the last, against the bytes before it.
func unseal(what string, md protoreflect.MessageDescriptor, b []byte) error {
	num := md.Fields().ByName("checksum").Number()
	n := protowire.SizeTag(num) + 4
	if len(b) < n {
		return fmt.Errorf("%s: %w", what, errSeal)
	}
	body, tail := b[:len(b)-n], b[len(b)-n:]
	if got, typ, k := protowire.ConsumeTag(tail); k != protowire.SizeTag(num) || got != num || typ != protowire.Fixed32Type {
		return fmt.Errorf("%s: %w", what, errSeal)
	}
	if binary.LittleEndian.Uint32(tail[n-4:]) != crc32.Checksum(body, castagnoli) {
		return fmt.Errorf("%s: %w", what, errSeal)
	}
	return nil
}

// MarshalSealed marshals m, a message with a last field "checksum", with
// its checksum.
func MarshalSealed(m proto.Message) ([]byte, error) { return sealed(m) }

// UnmarshalSealed checks b's checksum and unmarshals it into m; what
// names it in errors.
func UnmarshalSealed(what string, b []byte, m proto.Message) error {
	if err := unseal(what, m.ProtoReflect().Descriptor(), b); err != nil {
		return err
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
