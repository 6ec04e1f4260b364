package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// WriteFrame writes b to w as one length-delimited frame: its length as
// an unsigned varint (the libp2p convention, as in go-msgio's varint
// framing), then b itself, in a single Write call. The caller flushes w
// if it buffers.
func WriteFrame(w io.Writer, b []byte) error {
	buf := make([]byte, 0, binary.MaxVarintLen64+len(b))
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	buf = append(buf, b...)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("wire: write frame: %w", err)
	}
	return nil
}

// errVarint is returned for a length prefix that is not a minimally
// encoded unsigned varint of at most 64 bits.
var errVarint = errors.New("wire: frame length: malformed varint")

// ReadFrame reads one frame written by WriteFrame and returns its
// payload (an empty, non-nil slice for an empty frame). A frame whose
// length exceeds max is rejected, wrapping ErrTooLarge, before anything is
// allocated for it; the stream is then out of step and should be reset.
// At a clean end of stream, before any byte of a frame, ReadFrame returns
// io.EOF itself; a stream that ends inside a frame gives an error
// wrapping io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	if max < 0 {
		return nil, fmt.Errorf("wire: read frame: negative limit %d", max)
	}
	n, err := readUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("wire: frame of %d bytes: %w of %d bytes", n, ErrTooLarge, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("wire: read frame: %w", err)
	}
	return b, nil
}

// readUvarint reads a minimally encoded unsigned varint of at most
// binary.MaxVarintLen64 bytes, as go-varint does.
func readUvarint(r *bufio.Reader) (uint64, error) {
	var n uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := r.ReadByte()
		if err != nil {
			if i == 0 && err == io.EOF {
				return 0, io.EOF
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("wire: read frame length: %w", err)
		}
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, errVarint // overflows 64 bits
		}
		n |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, errVarint // not minimal: a trailing zero group
			}
			return n, nil
		}
	}
	return 0, errVarint
}
