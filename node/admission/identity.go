package admission

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// IdentityFile is the node's private key inside the data dir.
const IdentityFile = "identity.key"

// LoadIdentity reads the node's Ed25519 key from the data dir, creating
// and saving one on first start, so that a restart keeps the peer ID (the
// subject of the node's certificate). Its errors name the file.
func LoadIdentity(dataDir string) (crypto.PrivKey, error) {
	path := filepath.Join(dataDir, IdentityFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("identity %s is corrupt: %v", path, err)
		}
		if k.Type() != crypto.Ed25519 {
			return nil, fmt.Errorf("identity %s is not an Ed25519 key", path)
		}
		return k, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read identity %s: %v", path, err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate identity: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("marshal identity: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return nil, fmt.Errorf("write identity %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write identity %s: %v", path, err)
	}
	return k, nil
}
