package admission

import (
	"encoding/binary"
	"fmt"
)

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func readUvarint(b []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("admission message: %s: truncated", what)
	}
	return v, b[n:], nil
}

func readBytes(b []byte, what string) ([]byte, []byte, error) {
	n, rest, err := readUvarint(b, what)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(rest)) {
		return nil, nil, fmt.Errorf("admission message: %s: truncated", what)
	}
	return rest[:n], rest[n:], nil
}
