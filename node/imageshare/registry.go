package imageshare

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

// A registry pull, for an image no peer could send: the distribution
// API (v2) read by the node itself rather than by the engine, so that
// the pull is checked like a peer's archive (manifest, config and
// layers against the pinned ID) and gives up on lack of progress only.
// Anonymous pulls only; loopback registries are spoken to over plain
// HTTP (as docker does), every other over HTTPS.

// Media types a manifest or index may have.
const (
	mediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
	maxManifestBytes    = 4 << 20
)

// imageRef is a parsed image reference that names a registry.
type imageRef struct {
	host, repo, tag string // tag: a tag or a digest (sha256:…)
}

// parseRef splits a reference into its registry, repository and tag.
// References without a registry host (docker.io's short names) are not
// pulled, nor podman's local ones (`localhost/…`, what `podman import`
// and `podman build` name): ok is false.
func parseRef(ref string) (imageRef, bool) {
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || !strings.ContainsAny(host, ".:") {
		return imageRef{}, false
	}
	r := imageRef{host: host}
	if name, dg, ok := strings.Cut(rest, "@"); ok {
		r.repo, r.tag = name, dg
	} else if i := strings.LastIndex(rest, ":"); i > 0 {
		r.repo, r.tag = rest[:i], rest[i+1:]
	} else {
		r.repo, r.tag = rest, "latest"
	}
	if r.repo == "" || r.tag == "" {
		return imageRef{}, false
	}
	return r, true
}

func (r imageRef) base() string {
	scheme := "https"
	h := r.host
	if hn, _, err := net.SplitHostPort(h); err == nil {
		h = hn
	}
	if h == "localhost" {
		scheme = "http"
	} else if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil && ip.IsLoopback() {
		scheme = "http"
	}
	return scheme + "://" + r.host + "/v2/" + r.repo
}

// stallReader cancels its request when a read waits longer than stall.
type stallReader struct {
	r      io.Reader
	timer  *time.Timer
	stall  time.Duration
	n      int64
	stalls *atomic.Bool
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.n += int64(n)
		s.timer.Reset(s.stall)
	}
	if err != nil && s.stalls.Load() {
		return n, fmt.Errorf("no progress for %v after %d bytes", s.stall, s.n)
	}
	return n, err
}

// get fetches url; body is called with a reader that gives up when no
// byte arrives for the stall time.
func (s *Service) get(ctx context.Context, url string, accept []string, body func(resp *http.Response, r io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stalled atomic.Bool
	timer := time.AfterFunc(s.opts.Stall, func() { stalled.Store(true); cancel() })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for _, a := range accept {
		req.Header.Add("Accept", a)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if stalled.Load() {
			return fmt.Errorf("no answer in %v", s.opts.Stall)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%s: %s (registries that require a login are not supported)", url, resp.Status)
		}
		return fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	timer.Reset(s.opts.Stall)
	return body(resp, &stallReader{r: resp.Body, timer: timer, stall: s.opts.Stall, stalls: &stalled})
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
	Manifests []descriptor `json:"manifests"` // an index
}

// manifestFor reads the image manifest ref names, through an index to
// this host's platform.
func (s *Service) manifestFor(ctx context.Context, r imageRef) (manifest, error) {
	accept := []string{mediaDockerManifest, mediaOCIManifest, mediaDockerList, mediaOCIIndex}
	tag := r.tag
	for range 2 {
		var m manifest
		err := s.get(ctx, r.base()+"/manifests/"+tag, accept, func(resp *http.Response, body io.Reader) error {
			raw, err := io.ReadAll(io.LimitReader(body, maxManifestBytes+1))
			if err != nil {
				return err
			}
			if len(raw) > maxManifestBytes {
				return fmt.Errorf("manifest over %d bytes", maxManifestBytes)
			}
			if strings.HasPrefix(tag, digestPrefix) {
				if got := sum(raw); got != tag {
					return fmt.Errorf("manifest %s hashes to %s", tag, got)
				}
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("manifest: %w", err)
			}
			if m.MediaType == "" {
				m.MediaType = resp.Header.Get("Content-Type")
			}
			return nil
		})
		if err != nil {
			return manifest{}, err
		}
		if len(m.Manifests) == 0 {
			return m, nil
		}
		tag = ""
		for _, d := range m.Manifests {
			if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == goruntime.GOARCH && validDigest(d.Digest) {
				tag = d.Digest
				break
			}
		}
		if tag == "" {
			return manifest{}, fmt.Errorf("the index has no image for linux/%s", goruntime.GOARCH)
		}
	}
	return manifest{}, errors.New("an index that points to another index")
}

// Pull has the engine hold the image with ID id from the registry ref
// names, checking that the manifest's config is the pinned ID, that
// every blob hashes to its digest and every layer, unpacked, to the
// config's diff_ids.
func (s *Service) Pull(ctx context.Context, ref, id string) error {
	r, ok := parseRef(ref)
	if !ok {
		return fmt.Errorf("%s names no registry to pull from", ref)
	}
	m, err := s.manifestFor(ctx, r)
	if err != nil {
		return err
	}
	if m.Config.Digest != id {
		return fmt.Errorf("the registry's %s is %s, the job was pinned to %s", ref, m.Config.Digest, id)
	}
	if len(m.Layers) > maxEntries {
		return fmt.Errorf("manifest lists %d layers", len(m.Layers))
	}
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(s.opts.Dir, "pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var config blob
	err = s.get(ctx, r.base()+"/blobs/"+id, nil, func(_ *http.Response, body io.Reader) error {
		config, err = keep(io.LimitReader(body, maxConfig+1), dir, -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if config.sum != id {
		return fmt.Errorf("config %s: the bytes sent hash to %s", id, config.sum)
	}
	diffs, err := diffIDs(config, id)
	if err != nil {
		return err
	}
	if len(diffs) != len(m.Layers) {
		return fmt.Errorf("image %s: its config lists %d layers, the manifest %d", id, len(diffs), len(m.Layers))
	}
	layers := make([]blob, len(diffs))
	var total int64
	for i, d := range m.Layers {
		if !validDigest(d.Digest) {
			return fmt.Errorf("layer %d of %d: digest %q is not sha256:<64 hex digits>", i+1, len(diffs), d.Digest)
		}
		err := s.get(ctx, r.base()+"/blobs/"+d.Digest, nil, func(_ *http.Response, body io.Reader) error {
			b, err := unpackLayer(body, d, dir, spec.MaxImageSize-total)
			layers[i] = b
			return err
		})
		if err != nil {
			return fmt.Errorf("layer %s (%d of %d): %w", d.Digest, i+1, len(diffs), err)
		}
		if layers[i].sum != diffs[i] {
			return fmt.Errorf("layer %s (%d of %d) is damaged: unpacked it is %s, the config lists %s", d.Digest, i+1, len(diffs), layers[i].sum, diffs[i])
		}
		total += layers[i].size
	}
	archive, err := writeArchive(dir, id, config, diffs, layers)
	if err != nil {
		return err
	}
	return s.load(ctx, archive, id)
}

// unpackLayer keeps a layer blob unpacked (gzip or plain tar) in dir,
// checking the packed bytes against the blob's digest as they arrive.
func unpackLayer(r io.Reader, d descriptor, dir string, limit int64) (blob, error) {
	packed := sha256.New()
	tee := &hashingReader{r: r, h: packed}
	var src io.Reader = tee
	switch {
	case strings.HasSuffix(d.MediaType, "gzip") || strings.HasSuffix(d.MediaType, ".tar.gzip"):
		zr, err := gzip.NewReader(tee)
		if err != nil {
			return blob{}, err
		}
		src = zr
	case strings.HasSuffix(d.MediaType, "layer.v1.tar") || strings.HasSuffix(d.MediaType, ".tar"):
	default:
		return blob{}, fmt.Errorf("media type %q is not supported (gzip or plain tar)", d.MediaType)
	}
	b, err := keep(io.LimitReader(src, limit+1), dir, -1)
	if err != nil {
		return blob{}, err
	}
	if b.size > limit {
		return blob{}, fmt.Errorf("over %d bytes unpacked", int64(spec.MaxImageSize))
	}
	if _, err := io.Copy(io.Discard, tee); err != nil { // what follows the gzip stream still counts
		return blob{}, err
	}
	if got := digestPrefix + hex.EncodeToString(packed.Sum(nil)); got != d.Digest {
		return blob{}, fmt.Errorf("the bytes sent hash to %s", got)
	}
	return b, nil
}

type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return digestPrefix + hex.EncodeToString(s[:])
}
