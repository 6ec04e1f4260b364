package imageshare

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agora-sched/agora/market/spec"
)

// Limits on what a peer's archive may hold.
const (
	maxEntries      = 4096    // tar entries
	maxManifest     = 1 << 20 // manifest.json
	maxConfig       = 8 << 20 // the image config
	maxLinkHops     = 8       // symlinks followed to a layer
	digestPrefix    = "sha256:"
	archiveFileName = "image.tar"
)

// blob is a regular file of the received archive, kept on disk.
type blob struct {
	file string
	sum  string // sha256:hex
	size int64
}

// Unpack reads a docker-archive (what `podman save --format
// docker-archive` and `docker save` write) from r into dir, checks that
// it is the image whose ID (the sha256 of its config) is id, and writes
// a fresh archive of only that image's config and layers, with no names
// or tags, for the engine to load. It returns that archive's path. An
// error names what does not match: the config, or the layer by its
// digest and place.
func Unpack(r io.Reader, id, dir string) (string, error) {
	if !validDigest(id) {
		return "", fmt.Errorf("image ID %q is not sha256:<64 hex digits>", id)
	}
	files := map[string]blob{}
	links := map[string]string{}
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("archive: %w", err)
		}
		if n >= maxEntries {
			return "", fmt.Errorf("archive: more than %d entries", maxEntries)
		}
		name, ok := cleanName(hdr.Name)
		if !ok {
			return "", fmt.Errorf("archive: entry %q is outside the archive", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			if hdr.Size < 0 || total+hdr.Size > spec.MaxImageSize {
				return "", fmt.Errorf("archive: over %d bytes", int64(spec.MaxImageSize))
			}
			b, err := keep(tr, dir, hdr.Size)
			if err != nil {
				return "", fmt.Errorf("archive: %s: %w", name, err)
			}
			total += b.size
			files[name] = b
		case tar.TypeSymlink:
			target := hdr.Linkname
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(name), target)
			}
			if t, ok := cleanName(target); ok {
				links[name] = t
			}
		}
	}
	resolve := func(name string) (blob, bool) {
		name, ok := cleanName(name)
		for i := 0; ok && i <= maxLinkHops; i++ {
			if b, found := files[name]; found {
				return b, true
			}
			name, ok = links[name]
		}
		return blob{}, false
	}

	mb, ok := resolve("manifest.json")
	if !ok {
		return "", errors.New("archive: no manifest.json")
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := readJSON(mb, maxManifest, &manifest); err != nil {
		return "", fmt.Errorf("archive: manifest.json: %w", err)
	}
	if len(manifest) != 1 {
		return "", fmt.Errorf("archive: manifest.json lists %d images, want 1", len(manifest))
	}
	m := manifest[0]
	cb, ok := resolve(m.Config)
	if !ok {
		return "", fmt.Errorf("archive: config %q is not in the archive", m.Config)
	}
	if cb.sum != id {
		return "", fmt.Errorf("the config sent is %s, not the pinned image %s", cb.sum, id)
	}
	diffs, err := diffIDs(cb, id)
	if err != nil {
		return "", err
	}
	if len(diffs) != len(m.Layers) {
		return "", fmt.Errorf("image %s: its config lists %d layers, the archive %d", id, len(diffs), len(m.Layers))
	}
	layers := make([]blob, len(diffs))
	for i, d := range diffs {
		b, ok := resolve(m.Layers[i])
		if !ok {
			return "", fmt.Errorf("layer %s (%d of %d) is not in the archive sent", d, i+1, len(diffs))
		}
		if b.sum != d {
			return "", fmt.Errorf("layer %s (%d of %d) is damaged: the bytes sent hash to %s", d, i+1, len(diffs), b.sum)
		}
		layers[i] = b
	}
	return writeArchive(dir, id, cb, diffs, layers)
}

// diffIDs are the layer digests the image config b lists, in order.
func diffIDs(b blob, id string) ([]string, error) {
	var config struct {
		RootFS struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := readJSON(b, maxConfig, &config); err != nil {
		return nil, fmt.Errorf("image %s: config: %w", id, err)
	}
	if config.RootFS.Type != "layers" {
		return nil, fmt.Errorf("image %s: config rootfs type %q, want \"layers\"", id, config.RootFS.Type)
	}
	diffs := config.RootFS.DiffIDs
	if len(diffs) > maxEntries {
		return nil, fmt.Errorf("image %s: config lists %d layers", id, len(diffs))
	}
	for i, d := range diffs {
		if !validDigest(d) {
			return nil, fmt.Errorf("image %s: layer %d of %d: digest %q is not sha256:<64 hex digits>", id, i+1, len(diffs), d)
		}
	}
	return diffs, nil
}

// writeArchive writes the checked image as a docker-archive without
// names: manifest.json, the config and one file per distinct layer.
func writeArchive(dir, id string, config blob, diffs []string, layers []blob) (string, error) {
	out := filepath.Join(dir, archiveFileName)
	f, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	cfgName := strings.TrimPrefix(id, digestPrefix) + ".json"
	names := make([]string, len(diffs))
	for i, d := range diffs {
		names[i] = strings.TrimPrefix(d, digestPrefix) + ".tar"
	}
	mb, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{}, "Layers": names}})
	if err != nil {
		return "", err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o444, Size: int64(len(mb)), Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := tw.Write(mb); err != nil {
		return "", err
	}
	put := func(name string, b blob) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Size: b.size, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		src, err := os.Open(b.file)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	}
	if err := put(cfgName, config); err != nil {
		return "", err
	}
	written := map[string]bool{}
	for i, b := range layers {
		if written[names[i]] {
			continue
		}
		written[names[i]] = true
		if err := put(names[i], b); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return out, f.Close()
}

// keep copies one entry of size n (-1: all r gives) to a file in dir,
// hashing it.
func keep(r io.Reader, dir string, n int64) (blob, error) {
	f, err := os.CreateTemp(dir, "blob-")
	if err != nil {
		return blob{}, err
	}
	defer f.Close()
	h := sha256.New()
	if n >= 0 {
		r = io.LimitReader(r, n)
	}
	got, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return blob{}, err
	}
	if n >= 0 && got != n {
		return blob{}, io.ErrUnexpectedEOF
	}
	return blob{file: f.Name(), sum: digestPrefix + hex.EncodeToString(h.Sum(nil)), size: got}, f.Close()
}

func readJSON(b blob, limit int64, v any) error {
	if b.size > limit {
		return fmt.Errorf("%d bytes, over the limit of %d", b.size, limit)
	}
	raw, err := os.ReadFile(b.file)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// cleanName is an archive member's name relative to the archive's root,
// false for one that climbs out of it.
func cleanName(name string) (string, bool) {
	c := path.Clean(strings.TrimPrefix(name, "./"))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) {
		return "", false
	}
	return c, true
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, digestPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}
