package workload

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// openFile opens path for reading and, when its first bytes are gzip's
// magic number, decompresses it, whatever the file is called. Closing
// the result closes the file.
func openFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	r, err := maybeGzip(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("workload: %s: %w", path, err)
	}
	return &fileReader{Reader: r, f: f}, nil
}

// maybeGzip returns a reader of r's contents, decompressed when they
// start with gzip's magic number.
func maybeGzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(len(gzipMagic))
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(head) == len(gzipMagic) && head[0] == gzipMagic[0] && head[1] == gzipMagic[1] {
		return gzip.NewReader(br)
	}
	return br, nil
}

type fileReader struct {
	io.Reader
	f *os.File
}

func (r *fileReader) Close() error { return r.f.Close() }
