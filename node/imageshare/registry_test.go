package imageshare

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"
)

// testRegistry serves one image over the distribution API: a manifest
// (or an index pointing to it) under repo:tag, and blobs by digest.
type testRegistry struct {
	manifests map[string][]byte // by tag or digest
	blobs     map[string][]byte
	blobHook  func(w http.ResponseWriter, digest string) bool // true: handled
	auth      bool
}

func (tr *testRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tr.auth {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://auth.example/token"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v2/demo/box/")
	switch {
	case strings.HasPrefix(path, "manifests/"):
		m, ok := tr.manifests[strings.TrimPrefix(path, "manifests/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		var probe struct{ MediaType string }
		json.Unmarshal(m, &probe)
		w.Header().Set("Content-Type", probe.MediaType)
		w.Write(m)
	case strings.HasPrefix(path, "blobs/"):
		d := strings.TrimPrefix(path, "blobs/")
		if tr.blobHook != nil && tr.blobHook(w, d) {
			return
		}
		b, ok := tr.blobs[d]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// newTestRegistry holds img with its first layer gzipped and its second
// plain, under demo/box:1 (an index) and demo/box:direct (the manifest).
func newTestRegistry(t *testing.T, img *testImage) *testRegistry {
	tr := &testRegistry{manifests: map[string][]byte{}, blobs: map[string][]byte{img.id: img.config}}
	var layers []map[string]any
	for i, l := range img.layers {
		b, mt := l, "application/vnd.oci.image.layer.v1.tar"
		if i == 0 {
			b, mt = gz(t, l), "application/vnd.docker.image.rootfs.diff.tar.gzip"
		}
		tr.blobs[digest(b)] = b
		layers = append(layers, map[string]any{"mediaType": mt, "digest": digest(b), "size": len(b)})
	}
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaDockerManifest,
		"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": img.id, "size": len(img.config)},
		"layers": layers})
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaOCIIndex, "manifests": []map[string]any{
		{"mediaType": mediaDockerManifest, "digest": digest([]byte("other arch")), "size": 1, "platform": map[string]any{"os": "linux", "architecture": "s390x-not-" + goruntime.GOARCH}},
		{"mediaType": mediaDockerManifest, "digest": digest(m), "size": len(m), "platform": map[string]any{"os": "linux", "architecture": goruntime.GOARCH}},
	}})
	tr.manifests["direct"], tr.manifests[digest(m)], tr.manifests["1"] = m, m, idx
	return tr
}

func TestPull(t *testing.T) {
	img := newTestImage("layer one: bin/sh", "layer two: etc/motd")
	gzLayer := digest(gz(t, img.layers[0]))
	tests := []struct {
		name    string
		tag     string
		id      string
		change  func(tr *testRegistry)
		stall   time.Duration
		wantErr string
	}{
		{name: "through an index", tag: "1"},
		{name: "a manifest", tag: "direct"},
		{name: "tag moved to another image", tag: "direct", id: digest([]byte("pinned")),
			wantErr: "the registry's REF is " + img.id + ", the job was pinned to " + digest([]byte("pinned"))},
		{name: "damaged blob", tag: "direct", change: func(tr *testRegistry) {
			b := bytes.Clone(tr.blobs[gzLayer])
			b[len(b)-5] ^= 1
			tr.blobs[gzLayer] = b
		}, wantErr: "layer " + gzLayer + " (1 of 2):"},
		{name: "blob whose content is another layer", tag: "direct", change: func(tr *testRegistry) {
			tr.blobHook = func(w http.ResponseWriter, d string) bool {
				if d != digest(img.layers[1]) {
					return false
				}
				w.Write([]byte("layer two: etc/mot!"))
				return true
			}
		}, wantErr: "(2 of 2): the bytes sent hash to"},
		{name: "registry stalls mid-layer", tag: "direct", stall: 300 * time.Millisecond, change: func(tr *testRegistry) {
			tr.blobHook = func(w http.ResponseWriter, d string) bool {
				if d != gzLayer {
					return false
				}
				w.Write(tr.blobs[d][:10])
				w.(http.Flusher).Flush()
				time.Sleep(3 * time.Second)
				return true
			}
		}, wantErr: "no progress for 300ms after 10 bytes"},
		{name: "login required", tag: "direct", change: func(tr *testRegistry) { tr.auth = true }, wantErr: "registries that require a login are not supported"},
		{name: "unknown tag", tag: "nope", wantErr: "404"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRegistry(t, img)
			if tc.change != nil {
				tc.change(tr)
			}
			srv := httptest.NewServer(tr)
			defer srv.Close()
			stall := tc.stall
			if stall == 0 {
				stall = 10 * time.Second
			}
			s := newSide(t, stall)
			s.eng.loadID = img.id
			ref := strings.TrimPrefix(srv.URL, "http://") + "/demo/box:" + tc.tag
			id := img.id
			if tc.id != "" {
				id = tc.id
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := s.svc.Fetch(ctx, id, ref, nil)
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "REF", ref)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Fetch: %v, want an error with %q", err, want)
				}
				if len(s.eng.loaded) != 0 {
					t.Error("engine loaded an archive from a failed pull")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkLoadedOnce(t, s.eng, img)
		})
	}
}

func TestParseRef(t *testing.T) {
	for ref, want := range map[string]string{
		"127.0.0.1:5000/demo/box:1":     "http://127.0.0.1:5000/v2/demo/box tag 1",
		"localhost:5000/demo/box":       "http://localhost:5000/v2/demo/box tag latest",
		"localhost/demo/box:1":          "",
		"registry.example/a/b@sha256:0": "https://registry.example/v2/a/b tag sha256:0",
		"busybox:1":                     "",
		"library/busybox:1":             "",
	} {
		r, ok := parseRef(ref)
		got := ""
		if ok {
			got = r.base() + " tag " + r.tag
		}
		if got != want {
			t.Errorf("parseRef(%q) = %q, want %q", ref, got, want)
		}
	}
}
