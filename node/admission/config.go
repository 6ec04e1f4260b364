package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/store"
)

// Load reads a node's trust configuration: the authority (trust is its
// key's text, or a file holding it) and the node's certificate chain
// (certFile).
func Load(trust, certFile string) (*auth.Book, auth.Chain, error) {
	text := trust
	if !strings.HasPrefix(strings.TrimSpace(text), "agora-authority:") {
		b, err := os.ReadFile(trust)
		if err != nil {
			return nil, nil, fmt.Errorf("--trust %s: neither an authority key nor a readable file: %v", trust, err)
		}
		text = string(b)
	}
	root, err := auth.ParseAuthority(text)
	if err != nil {
		return nil, nil, fmt.Errorf("--trust: %w", err)
	}
	if certFile == "" {
		return nil, nil, fmt.Errorf("--trust needs --cert FILE: this node's certificate (agora admit)")
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--cert: %w", err)
	}
	chain, err := auth.ParseChainPEM(b)
	if err != nil {
		return nil, nil, fmt.Errorf("--cert %s: %w", certFile, err)
	}
	return auth.NewBook(root), chain, nil
}

// Revocations keeps the revocations a node learned in its store, so that
// they hold across restarts.
type Revocations struct{ b *store.Bucket[[]byte] }

// NewRevocations is the store's revocations bucket.
func NewRevocations(st *store.Store) *Revocations {
	return &Revocations{b: store.NewBucket[[]byte](st, "revocations")}
}

// LoadInto takes every stored revocation into book; one that no longer
// verifies is logged and skipped.
func (r *Revocations) LoadInto(book *auth.Book, now time.Time) error {
	return r.b.Scan("", func(key string, raw []byte) (bool, error) {
		rev, err := auth.DecodeRevocation(raw)
		if err == nil {
			_, err = book.Revoke(rev, now)
		}
		if err != nil {
			log.Warnw("stored revocation dropped", "key", key, "err", err)
		}
		return true, nil
	})
}

// Keep stores a revocation.
func (r *Revocations) Keep(rev auth.Revocation) {
	enc := rev.Encode()
	sum := sha256.Sum256(enc)
	if err := r.b.Put(hex.EncodeToString(sum[:16]), enc); err != nil {
		log.Warnw("save revocation", "target", rev.Target, "err", err)
	}
}

// CheckExposure refuses, for a node without an authority, a listen
// address beyond loopback: anyone who reaches it could run commands
// there.
func CheckExposure(listen []ma.Multiaddr) error {
	for _, a := range listen {
		ip, err := a.ValueForProtocol(ma.P_IP4)
		if err != nil {
			ip, err = a.ValueForProtocol(ma.P_IP6)
		}
		if err != nil {
			return fmt.Errorf("listen address %s: without --trust only loopback IP addresses may be used; give --trust (admit only certified peers) or --insecure (accept anyone)", a)
		}
		if p := net.ParseIP(ip); p == nil || !p.IsLoopback() {
			return fmt.Errorf("listen address %s is not loopback: a node without --trust lets any peer that reaches it run commands; give --trust (admit only certified peers) or --insecure (accept anyone)", a)
		}
	}
	return nil
}
