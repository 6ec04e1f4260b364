package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// identityFile is the node's private key inside the data dir.
const identityFile = "identity.key"

// loadIdentity reads the node's Ed25519 key from the data dir, creating and
// saving one on first start, so that a restart keeps the peer ID.
func loadIdentity(dataDir string) (crypto.PrivKey, error) {
	path := filepath.Join(dataDir, identityFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, configErr("identity %s is corrupt: %v", path, err)
		}
		if k.Type() != crypto.Ed25519 {
			return nil, configErr("identity %s is not an Ed25519 key", path)
		}
		return k, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, configErr("read identity %s: %v", path, err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node: generate identity: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("node: marshal identity: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return nil, configErr("write identity %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, configErr("write identity %s: %v", path, err)
	}
	return k, nil
}
