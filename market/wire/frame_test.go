package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var msgs [][]byte
	for _, tc := range roundTrips() {
		b, err := Encode(tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	msgs = append(msgs, []byte{}, bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{9}, 1<<17))

	var buf bytes.Buffer
	for _, m := range msgs {
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&buf)
	for i, want := range msgs {
		got, err := ReadFrame(r, MaxMessageBytes)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) || got == nil {
			t.Fatalf("frame %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
	if _, err := ReadFrame(r, MaxMessageBytes); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// TestFramePrefix checks the prefix is the libp2p unsigned varint.
func TestFramePrefix(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	if p := buf.Bytes()[:2]; p[0] != 0xac || p[1] != 0x02 || buf.Len() != 302 {
		t.Fatalf("prefix % x, length %d", p, buf.Len())
	}
}

func TestFrameOversize(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, make([]byte, MaxMessageBytes+1)); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFrame(bufio.NewReader(&buf), MaxMessageBytes)
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), fmt.Sprintf("wire: frame of %d bytes", MaxMessageBytes+1)) {
		t.Fatalf("oversize frame: %v", err)
	}

	// A claimed length over max is refused from the prefix alone, before
	// the body is allocated: claim 64 MiB + 1 against a 64 MiB limit and
	// check that far less than that was allocated.
	const limit = 64 << 20
	claim := binary.AppendUvarint(nil, limit+1)
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(claim), strings.NewReader("body")))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadFrame(r, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("frame over a 64 MiB limit: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("rejecting an oversize frame allocated %d bytes", n)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(huge)), MaxMessageBytes); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("frame claiming 2^64-1 bytes: %v", err)
	}
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader([]byte{5, 1, 2, 3, 4, 5})), 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("frame of 5 with max 4: %v", err)
	}
	if b, err := ReadFrame(bufio.NewReader(bytes.NewReader([]byte{4, 1, 2, 3, 4})), 4); err != nil || len(b) != 4 {
		t.Fatalf("frame of 4 with max 4: %v", err)
	}
}

func TestFrameMalformed(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  error
		text  string
	}{
		{"truncated prefix", []byte{0x80}, io.ErrUnexpectedEOF, "wire: read frame length"},
		{"truncated body", []byte{0x05, 1, 2}, io.ErrUnexpectedEOF, "wire: read frame"},
		{"empty body after prefix", []byte{0x05}, io.ErrUnexpectedEOF, "wire: read frame"},
		{"non-minimal prefix", []byte{0x81, 0x00, 1}, errVarint, "wire: frame length"},
		{"varint over 64 bits", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, errVarint, "wire: frame length"},
		{"varint of 11 bytes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00}, errVarint, "wire: frame length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bufio.NewReader(bytes.NewReader(tc.input)), 1<<20)
			if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.text) {
				t.Fatalf("error %v, want %v starting %q", err, tc.want, tc.text)
			}
		})
	}
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(nil)), -1); err == nil {
		t.Fatal("negative max accepted")
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("boom") }

// countWriter counts Write calls.
type countWriter struct{ calls int }

func (c *countWriter) Write(p []byte) (int, error) { c.calls++; return len(p), nil }

func TestWriteFrame(t *testing.T) {
	if err := WriteFrame(failWriter{}, []byte("x")); err == nil || !strings.HasPrefix(err.Error(), "wire: write frame") {
		t.Fatalf("write error: %v", err)
	}
	var cw countWriter
	if err := WriteFrame(&cw, make([]byte, 1000)); err != nil || cw.calls != 1 {
		t.Fatalf("WriteFrame made %d writes (err %v), want one", cw.calls, err)
	}
}
