package api

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// The local API token. A node without an authority keeps one in its data
// directory (TokenFile) and publishes a copy where the agora command of
// the same user finds it by the API's address (TokenPath); a client of
// another user, or a web page, cannot read either.

// TokenFile is the token's file in a node's data directory.
const TokenFile = "api.token"

// TokenFileHint says where the token is, for messages.
const TokenFileHint = TokenFile + " in the node's data directory, published for the agora command as $AGORA_TOKEN_DIR, $XDG_RUNTIME_DIR/agora or ~/.cache/agora/api-PORT.token; or $AGORA_API_TOKEN"

// LoadOrCreateToken reads the token kept in dir, or makes one (32 random
// bytes from rnd, hex) and keeps it, readable by its owner only.
func LoadOrCreateToken(dir string, rnd io.Reader) (string, error) {
	path := filepath.Join(dir, TokenFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		t := strings.TrimSpace(string(b))
		if len(t) < 32 || strings.ContainsAny(t, " \t\r\n") {
			return "", fmt.Errorf("%s: not a token (delete it to make a new one)", path)
		}
		return t, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	raw := make([]byte, 32)
	if _, err := io.ReadFull(rnd, raw); err != nil {
		return "", err
	}
	t := hex.EncodeToString(raw)
	if err := writePrivate(path, t); err != nil {
		return "", err
	}
	return t, nil
}

// TokenPath is where the token of the API at addr (host:port) is
// published for clients of this user: in $AGORA_TOKEN_DIR, else
// $XDG_RUNTIME_DIR/agora, else the user's cache directory's agora, the
// file api-PORT.token for a loopback or unspecified host (any name of
// this machine reaches it), api-HOST-PORT.token for another.
func TokenPath(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("API address %q: %v", addr, err)
	}
	dir := os.Getenv("AGORA_TOKEN_DIR")
	if dir == "" {
		if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
			dir = filepath.Join(rt, "agora")
		} else {
			c, err := os.UserCacheDir()
			if err != nil {
				return "", err
			}
			dir = filepath.Join(c, "agora")
		}
	}
	name := "api-" + port + ".token"
	if ip := net.ParseIP(strings.Trim(host, "[]")); !strings.EqualFold(host, "localhost") && host != "" && (ip == nil || !(ip.IsLoopback() || ip.IsUnspecified())) {
		name = "api-" + strings.NewReplacer(":", "_", "/", "_").Replace(host) + "-" + port + ".token"
	}
	return filepath.Join(dir, name), nil
}

// PublishToken writes token where this user's clients of the API at addr
// look for it, and returns the path.
func PublishToken(addr, token string) (string, error) {
	path, err := TokenPath(addr)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, writePrivate(path, token)
}

// UnpublishToken removes the published copy for addr if it still holds
// token (a later node on the same port may have replaced it).
func UnpublishToken(addr, token string) {
	path, err := TokenPath(addr)
	if err != nil || token == "" {
		return
	}
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == token {
		_ = os.Remove(path)
	}
}

// FindToken is the token a client sends to the API at addr:
// $AGORA_API_TOKEN, else the one published for addr, else "".
func FindToken(addr string) string {
	if t := os.Getenv("AGORA_API_TOKEN"); t != "" {
		return t
	}
	path, err := TokenPath(addr)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// writePrivate writes s to path, readable by its owner only, through a
// temporary file so that a reader never sees half of it.
func writePrivate(path, s string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(s + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
