package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeReq is one request a fakeNode received.
type fakeReq struct {
	Method, Path, Query, ContentType string
	Body                             []byte
}

// fakeNode is a canned node API: answer decides each reply, and every
// request is recorded.
type fakeNode struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []fakeReq
}

// answer returns a reply's status and JSON body for a request.
type answer func(r fakeReq, n int) (int, string)

// newFakeNode starts a fake node; answer gets each request and how many
// requests with the same method and path came before it.
func newFakeNode(t *testing.T, a answer) *fakeNode {
	t.Helper()
	f := &fakeNode{}
	seen := map[string]int{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := fakeReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, ContentType: r.Header.Get("Content-Type"), Body: body}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		k := r.Method + " " + r.URL.Path
		n := seen[k]
		seen[k]++
		f.mu.Unlock()
		status, out := a(req, n)
		if status == 0 {
			panic(http.ErrAbortHandler) // drop the connection: an unreachable node
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// api is the fake's host:port, for --api.
func (f *fakeNode) api() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// requests returns a copy of the requests so far.
func (f *fakeNode) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeReq(nil), f.reqs...)
}

// cli runs one agora command in-process.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errs bytes.Buffer
	code = runMain(args, &out, &errs)
	return out.String(), errs.String(), code
}

// fastPolling shortens the polling loops' periods for one test.
func fastPolling(t *testing.T) {
	w, f, r := waitInterval, followInterval, retryWindow
	waitInterval, followInterval, retryWindow = 5*time.Millisecond, 5*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { waitInterval, followInterval, retryWindow = w, f, r })
}

// unreachableAPI is an address where no node listens.
func unreachableAPI(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	return addr
}
