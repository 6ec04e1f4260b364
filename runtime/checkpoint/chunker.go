package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
)

// Chunk sizes of the content-defined chunker. Every chunk of a file is at
// least MinChunkSize bytes except the file's last one, and at most
// MaxChunkSize bytes, which is the store's blob limit (store.MaxBlobSize).
const (
	MinChunkSize = 64 << 10  // 64 KiB
	AvgChunkSize = 256 << 10 // 256 KiB, the target the chunker normalises to
	MaxChunkSize = 512 << 10 // 512 KiB
)

// The chunker is FastCDC-style: a gear rolling hash h = h<<1 + gear[b]
// whose top bits depend on the last 64 bytes only. A cut is made after a
// byte when the top bits selected by the mask are all zero: 20 bits (a cut
// every 1 MiB on average) while the chunk is shorter than AvgChunkSize, 16
// bits (every 64 KiB) after, which pulls chunk sizes towards the average.
const (
	gearWindow = 64
	maskSmall  = uint64(1<<20-1) << (64 - 20)
	maskLarge  = uint64(1<<16-1) << (64 - 16)
	gearSeed   = "agora-checkpoint-gear-v1"
)

// gear is the rolling hash's byte table: gear[i] is the first 8 bytes, big
// endian, of SHA-256(gearSeed || byte(i)).
var gear = func() (t [256]uint64) {
	for i := range t {
		sum := sha256.Sum256(append([]byte(gearSeed), byte(i)))
		t[i] = binary.BigEndian.Uint64(sum[:8])
	}
	return t
}()

// cutPoint returns the length of the chunk that starts data. data must hold
// MaxChunkSize bytes unless it is the rest of the file.
func cutPoint(data []byte) int {
	n := len(data)
	if n <= MinChunkSize {
		return n
	}
	n = min(n, MaxChunkSize)
	var h uint64
	// Prime the window so the first candidate cut sees 64 bytes.
	for _, b := range data[MinChunkSize-gearWindow : MinChunkSize-1] {
		h = h<<1 + gear[b]
	}
	// A cut after data[i] makes a chunk of i+1 bytes.
	i := MinChunkSize - 1
	for small := min(n, AvgChunkSize-1); i < small; i++ {
		h = h<<1 + gear[data[i]]
		if h&maskSmall == 0 {
			return i + 1
		}
	}
	for ; i < n; i++ {
		h = h<<1 + gear[data[i]]
		if h&maskLarge == 0 {
			return i + 1
		}
	}
	return n
}

// ID is the ID of a chunk, or of a manifest from its canonical encoding:
// the lowercase hex SHA-256 of the bytes.
func ID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// chunker splits a stream into content-defined chunks.
type chunker struct {
	r     io.Reader
	buf   []byte // MaxChunkSize bytes
	start int    // buf[start:end] is read but not yet returned
	end   int
	eof   bool
}

// newChunker returns a chunker reading r into buf, which is allocated when
// it is shorter than MaxChunkSize. A buffer may be reused once the previous
// chunker is done with it.
func newChunker(r io.Reader, buf []byte) *chunker {
	if len(buf) < MaxChunkSize {
		buf = make([]byte, MaxChunkSize)
	}
	return &chunker{r: r, buf: buf[:MaxChunkSize]}
}

// next returns the next chunk, valid until the following call, or io.EOF
// after the last one.
func (c *chunker) next() ([]byte, error) {
	if c.start > 0 {
		c.end = copy(c.buf, c.buf[c.start:c.end])
		c.start = 0
	}
	if !c.eof && c.end < len(c.buf) {
		n, err := io.ReadFull(c.r, c.buf[c.end:])
		c.end += n
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			c.eof = true
		case err != nil:
			return nil, err
		}
	}
	if c.end == 0 {
		return nil, io.EOF
	}
	c.start = cutPoint(c.buf[:c.end])
	return c.buf[:c.start], nil
}
