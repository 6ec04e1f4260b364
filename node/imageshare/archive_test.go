package imageshare

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// testImage is an image as an engine would save it: layers, a config
// listing their digests, a manifest naming both.
type testImage struct {
	layers  [][]byte
	config  []byte
	id      string
	entries []entry // the archive's members, in order
}

type entry struct {
	name, link string
	body       []byte
}

func newTestImage(layers ...string) *testImage {
	img := &testImage{}
	var diffs []string
	for _, l := range layers {
		img.layers = append(img.layers, []byte(l))
		diffs = append(diffs, digest([]byte(l)))
	}
	cfg, _ := json.Marshal(map[string]any{"rootfs": map[string]any{"type": "layers", "diff_ids": diffs}, "config": map[string]any{"Env": []string{"PATH=/bin"}}})
	img.config, img.id = cfg, digest(cfg)
	var names []string
	for i, d := range diffs {
		n := strings.TrimPrefix(d, "sha256:") + ".tar"
		names = append(names, n)
		img.entries = append(img.entries, entry{name: n, body: img.layers[i]})
	}
	cn := strings.TrimPrefix(img.id, "sha256:") + ".json"
	img.entries = append(img.entries, entry{name: cn, body: cfg})
	m, _ := json.Marshal([]map[string]any{{"Config": cn, "RepoTags": []string{"evil/retag:latest"}, "Layers": names}})
	img.entries = append(img.entries, entry{name: "manifest.json", body: m})
	return img
}

func (img *testImage) tar(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range img.entries {
		h := &tar.Header{Name: e.name, Mode: 0o444, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.link != "" {
			h = &tar.Header{Name: e.name, Linkname: e.link, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.link == "" {
			tw.Write(e.body)
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestUnpack(t *testing.T) {
	layerA, layerB := "layer one: bin/sh", "layer two: etc/motd"
	tests := []struct {
		name    string
		change  func(img *testImage)
		id      func(img *testImage) string
		wantErr string // "" for a good archive
	}{
		{name: "whole image"},
		{name: "layer behind a symlink (docker's layout)", change: func(img *testImage) {
			img.entries = append([]entry{{name: "abc/layer.tar", body: img.layers[0]}}, img.entries...)
			img.entries[1] = entry{name: img.entries[1].name, link: "abc/layer.tar"}
		}},
		{name: "damaged layer names it", change: func(img *testImage) {
			img.entries[1].body = []byte("layer two: etc/mot!")
		}, wantErr: "layer " + digest([]byte(layerB)) + " (2 of 2) is damaged"},
		{name: "missing layer", change: func(img *testImage) {
			img.entries = img.entries[1:]
		}, wantErr: "(1 of 2) is not in the archive sent"},
		{name: "another image than the pinned one", id: func(*testImage) string { return digest([]byte("other")) },
			wantErr: "not the pinned image " + digest([]byte("other"))},
		{name: "config with fewer layers than the manifest", change: func(img *testImage) {
			var m []map[string]any
			json.Unmarshal(img.entries[3].body, &m)
			m[0]["Layers"] = append(m[0]["Layers"].([]any), "x.tar")
			img.entries[3].body, _ = json.Marshal(m)
		}, wantErr: "its config lists 2 layers, the archive 3"},
		{name: "no manifest", change: func(img *testImage) { img.entries = img.entries[:3] }, wantErr: "no manifest.json"},
		{name: "entry outside the archive", change: func(img *testImage) {
			img.entries = append(img.entries, entry{name: "../../etc/passwd", body: []byte("x")})
		}, wantErr: "is outside the archive"},
		{name: "two images", change: func(img *testImage) {
			var m []map[string]any
			json.Unmarshal(img.entries[3].body, &m)
			img.entries[3].body, _ = json.Marshal(append(m, m[0]))
		}, wantErr: "lists 2 images, want 1"},
		{name: "symlink loop", change: func(img *testImage) {
			img.entries[0] = entry{name: img.entries[0].name, link: img.entries[0].name}
		}, wantErr: "(1 of 2) is not in the archive sent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := newTestImage(layerA, layerB)
			if tc.change != nil {
				tc.change(img)
			}
			id := img.id
			if tc.id != nil {
				id = tc.id(img)
			}
			dir := t.TempDir()
			out, err := Unpack(bytes.NewReader(img.tar(t)), id, dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Unpack: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkClean(t, out, img)
		})
	}
}

// checkClean checks the archive Unpack wrote: the config and layers
// byte for byte, no tags, nothing else.
func checkClean(t *testing.T, path string, img *testImage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		var b bytes.Buffer
		b.ReadFrom(tr)
		got[h.Name] = b.Bytes()
	}
	cn := strings.TrimPrefix(img.id, "sha256:") + ".json"
	if !bytes.Equal(got[cn], img.config) {
		t.Errorf("config in the clean archive differs")
	}
	for _, l := range img.layers {
		if n := strings.TrimPrefix(digest(l), "sha256:") + ".tar"; !bytes.Equal(got[n], l) {
			t.Errorf("layer %s missing or differs", n)
		}
	}
	if len(got) != 2+len(img.layers) {
		t.Errorf("clean archive has %d members, want %d", len(got), 2+len(img.layers))
	}
	var m []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(got["manifest.json"], &m); err != nil || len(m) != 1 || len(m[0].RepoTags) != 0 || m[0].Config != cn {
		t.Errorf("clean manifest %s: want one image, its config, no tags", got["manifest.json"])
	}
}
