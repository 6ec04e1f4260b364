package imageshare

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market/spec"
)

var log = logging.Logger("imageshare")

// Protocol carries one image per stream (docs/protocol.md, "Image
// protocol"): the fetcher sends a request frame naming the image's ID,
// the holder answers with data frames of a docker-archive and one end
// frame, ok or an error.
const Protocol = protocol.ID("/agora/image/1.0.0")

// Frame kinds: a frame is its kind (one byte), its payload's length
// (four bytes, big-endian) and the payload.
const (
	kindRequest = 'q' // JSON request
	kindData    = 'd' // archive bytes
	kindError   = 'e' // the holder failed; the payload says why
	kindOK      = 'k' // the archive is complete
)

const (
	maxFrame   = 1 << 20
	maxRequest = 1 << 10
	// DefaultStall is how long a transfer may go without a byte before
	// it is given up: a slow link that keeps moving is never cut off.
	DefaultStall = time.Minute
	// maxServing is how many images a node sends at once.
	maxServing = 4
	// maxHolders is how many peers a fetch asks, one after the other.
	maxHolders = 8
)

type request struct {
	Image string `json:"image"`
}

// Engine is what the service needs of the node's container engine.
type Engine interface {
	HasImage(ctx context.Context, id string) bool
	// SaveImage writes the image with ID id to w as a docker-archive.
	SaveImage(ctx context.Context, id string, w io.Writer) error
	// LoadImage loads the docker-archive at path.
	LoadImage(ctx context.Context, path string) error
}

// Options configure a Service.
type Options struct {
	// Dir holds images being received (removed as each ends).
	Dir string
	// Stall overrides DefaultStall.
	Stall time.Duration
	// Refused counts a refused request by reason (nil: not counted).
	Refused func(reason string)
}

// Service sends the images this node's engine holds to peers and
// fetches the ones it lacks from them.
type Service struct {
	h       host.Host
	eng     Engine
	opts    Options
	serving atomic.Int32

	http     *http.Client
	mu       sync.Mutex
	inflight map[string]*fetchCall
	// Fetched and Served count archive bytes received and sent.
	Fetched, Served atomic.Int64
}

type fetchCall struct {
	done chan struct{}
	err  error
}

// New registers the image protocol on h.
func New(h host.Host, eng Engine, opts Options) *Service {
	if opts.Stall <= 0 {
		opts.Stall = DefaultStall
	}
	s := &Service{h: h, eng: eng, opts: opts, inflight: map[string]*fetchCall{},
		http: &http.Client{Transport: &http.Transport{Proxy: nil, TLSHandshakeTimeout: opts.Stall, ResponseHeaderTimeout: opts.Stall}}}
	h.SetStreamHandler(Protocol, s.handle)
	return s
}

func (s *Service) refuse(reason string) {
	if s.opts.Refused != nil {
		s.opts.Refused(reason)
	}
}

func writeFrame(w io.Writer, kind byte, b []byte) error {
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

func readFrame(r io.Reader, limit int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if int64(n) > int64(limit) {
		return 0, nil, fmt.Errorf("frame of %d bytes, over the limit of %d", n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return hdr[0], b, nil
}

// frameWriter turns the engine's output into data frames, each write
// bounded by the stall time.
type frameWriter struct {
	st    network.Stream
	stall time.Duration
	n     *atomic.Int64
}

func (w frameWriter) Write(b []byte) (int, error) {
	for off := 0; off < len(b); {
		end := min(len(b), off+maxFrame)
		_ = w.st.SetWriteDeadline(time.Now().Add(w.stall))
		if err := writeFrame(w.st, kindData, b[off:end]); err != nil {
			return off, err
		}
		w.n.Add(int64(end - off))
		off = end
	}
	return len(b), nil
}

// handle sends one image.
func (s *Service) handle(st network.Stream) {
	defer st.Close()
	_ = st.SetReadDeadline(time.Now().Add(s.opts.Stall))
	kind, b, err := readFrame(st, maxRequest)
	if err != nil || kind != kindRequest {
		s.refuse("image: malformed request")
		_ = st.Reset()
		return
	}
	var q request
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil || !validDigest(q.Image) {
		s.refuse("image: malformed request")
		_ = st.Reset()
		return
	}
	fail := func(msg string) {
		_ = st.SetWriteDeadline(time.Now().Add(s.opts.Stall))
		_ = writeFrame(st, kindError, []byte(clip(msg, 2000)))
	}
	if s.serving.Add(1) > maxServing {
		s.serving.Add(-1)
		fail("busy: sending other images")
		return
	}
	defer s.serving.Add(-1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !s.eng.HasImage(ctx, q.Image) {
		fail("does not hold " + q.Image)
		return
	}
	w := frameWriter{st: st, stall: s.opts.Stall, n: &s.Served}
	if err := s.eng.SaveImage(ctx, q.Image, w); err != nil {
		log.Warnw("send image", "image", q.Image, "peer", st.Conn().RemotePeer(), "err", err)
		fail(err.Error())
		return
	}
	_ = st.SetWriteDeadline(time.Now().Add(s.opts.Stall))
	_ = writeFrame(st, kindOK, nil)
}

// frameReader reads the data frames of one answer, each within the
// stall time; it ends at the ok frame and fails at an error frame.
type frameReader struct {
	st    network.Stream
	stall time.Duration
	buf   []byte
	total int64
	done  bool
	n     *atomic.Int64
}

// errHolder is an error the holder reported.
type errHolder string

func (e errHolder) Error() string { return "it said: " + string(e) }

func (r *frameReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.done {
			return 0, io.EOF
		}
		_ = r.st.SetReadDeadline(time.Now().Add(r.stall))
		kind, b, err := readFrame(r.st, maxFrame)
		if err != nil {
			var te interface{ Timeout() bool }
			if errors.As(err, &te) && te.Timeout() {
				return 0, fmt.Errorf("no progress for %v after %d bytes", r.stall, r.total)
			}
			return 0, err
		}
		switch kind {
		case kindData:
			r.total += int64(len(b))
			r.n.Add(int64(len(b)))
			if r.total > spec.MaxImageSize {
				return 0, fmt.Errorf("over %d bytes", int64(spec.MaxImageSize))
			}
			r.buf = b
		case kindOK:
			r.done = true
		case kindError:
			return 0, errHolder(clip(string(b), 2000))
		default:
			return 0, fmt.Errorf("unknown frame kind %q", kind)
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Fetch makes the engine hold the image with ID id, asking holders for
// it one after the other (at most eight) until one sends it whole and
// checked, then, when ref names a registry, pulling it from there.
// Concurrent fetches of one image share one transfer. The error, when
// every source failed, says what each did.
func (s *Service) Fetch(ctx context.Context, id, ref string, holders []peer.ID) error {
	if !validDigest(id) {
		return fmt.Errorf("image ID %q is not sha256:<64 hex digits>", id)
	}
	s.mu.Lock()
	if c, ok := s.inflight[id]; ok {
		s.mu.Unlock()
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c := &fetchCall{done: make(chan struct{})}
	s.inflight[id] = c
	s.mu.Unlock()
	c.err = s.fetch(ctx, id, ref, holders)
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
	close(c.done)
	return c.err
}

func (s *Service) fetch(ctx context.Context, id, ref string, holders []peer.ID) error {
	if s.eng.HasImage(ctx, id) {
		return nil
	}
	var errs []string
	asked := 0
	for _, p := range holders {
		if p == s.h.ID() {
			continue
		}
		if asked == maxHolders || ctx.Err() != nil {
			break
		}
		asked++
		t0 := time.Now()
		err := s.fetchFrom(ctx, p, id)
		if err == nil {
			log.Infow("image fetched", "image", id, "peer", p, "took", time.Since(t0))
			return nil
		}
		log.Infow("image fetch failed", "image", id, "peer", p, "err", err)
		errs = append(errs, fmt.Sprintf("from %s: %v", shortPeer(p), err))
	}
	if _, ok := parseRef(ref); ok && ctx.Err() == nil {
		t0 := time.Now()
		err := s.Pull(ctx, ref, id)
		if err == nil {
			log.Infow("image pulled", "image", id, "ref", ref, "took", time.Since(t0))
			return nil
		}
		log.Infow("image pull failed", "image", id, "ref", ref, "err", err)
		errs = append(errs, fmt.Sprintf("from the registry: %v", err))
	}
	if len(errs) == 0 {
		return fmt.Errorf("image %s is not on this node, no peer is known to hold it and %q names no registry", id, ref)
	}
	return fmt.Errorf("image %s is not on this node and could not be had (%s)", id, strings.Join(errs, "; "))
}

func (s *Service) fetchFrom(ctx context.Context, p peer.ID, id string) error {
	st, err := s.h.NewStream(network.WithAllowLimitedConn(ctx, "image"), p, Protocol)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	defer st.Close()
	q, _ := json.Marshal(request{Image: id})
	_ = st.SetWriteDeadline(time.Now().Add(s.opts.Stall))
	if err := writeFrame(st, kindRequest, q); err != nil {
		_ = st.Reset()
		return err
	}
	_ = st.CloseWrite()
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(s.opts.Dir, "fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &frameReader{st: st, stall: s.opts.Stall, n: &s.Fetched}
	archive, err := Unpack(r, id, dir)
	// Read on to the end frame: a holder whose engine failed half-way
	// has sent a well-formed but partial archive, then says why.
	if _, derr := io.Copy(io.Discard, r); derr != nil {
		var he errHolder
		if err == nil || errors.As(derr, &he) {
			err = derr
		}
	}
	if err != nil {
		_ = st.Reset()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return s.load(ctx, archive, id)
}

// load has the engine load a checked archive and checks that it then
// holds the image.
func (s *Service) load(ctx context.Context, archive, id string) error {
	if err := s.eng.LoadImage(ctx, archive); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if !s.eng.HasImage(ctx, id) {
		return fmt.Errorf("the engine loaded the archive but does not hold %s", id)
	}
	return nil
}

func shortPeer(p peer.ID) string {
	s := p.String()
	if len(s) > 12 {
		return s[len(s)-12:]
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
