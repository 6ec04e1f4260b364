package runtime

import (
	"errors"
	"io"
	"os"
	"sync"
)

// Stream names passed to LogSink.Write.
const (
	// StreamStdout names the task's standard output.
	StreamStdout = "stdout"
	// StreamStderr names the task's standard error.
	StreamStderr = "stderr"
)

// MaxChunk is the largest number of bytes passed to one LogSink.Write call.
const MaxChunk = 32 << 10

// LogSink receives a task's output. Each call carries one chunk of at most
// MaxChunk bytes from stream ("stdout" or "stderr"), forwarded as soon as the
// process has written it; chunks are not aligned to lines. Calls for one task
// are serialized, all of them happen before that task's done callback, and
// the sink owns data. A slow sink slows the task down once the pipe buffer
// fills, so it should store or queue the data quickly.
type LogSink interface {
	// Write receives one chunk of output from the named stream.
	Write(stream string, data []byte)
}

// LogSinkFunc adapts a function to the LogSink interface.
type LogSinkFunc func(stream string, data []byte)

// Write calls f(stream, data).
func (f LogSinkFunc) Write(stream string, data []byte) { f(stream, data) }

// output forwards a task's two streams to its sink, one call at a time, and
// drops anything that arrives after it is closed.
type output struct {
	mu     sync.Mutex
	sink   LogSink
	closed bool
	wg     sync.WaitGroup
}

func newOutput(sink LogSink) *output {
	return &output{sink: sink}
}

// pump starts copying r to the sink under the given stream name until r
// returns an error (EOF, or a deadline set to abandon the pipe).
func (o *output) pump(stream string, r *os.File) {
	o.wg.Go(func() {
		buf := make([]byte, MaxChunk)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				o.write(stream, buf[:n])
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
					log.Debugw("reading task output", "stream", stream, "err", err)
				}
				return
			}
		}
	})
}

func (o *output) write(stream string, p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.sink == nil {
		return
	}
	o.sink.Write(stream, append([]byte(nil), p...))
}

// close makes later writes no-ops; it waits for a write in progress.
func (o *output) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}
