package admission

import (
	"errors"
	"fmt"

	"github.com/agora-sched/agora/market/auth"
)

// helloVersion is the version of the admission message.
const helloVersion = 1

// maxHello bounds an admission message: a chain and every revocation a
// node may hold.
const maxHello = 4 << 20

// hello is what each side of the handshake sends: its certificate chain
// and the revocations it knows.
type hello struct {
	chain auth.Chain
	revs  []auth.Revocation
}

// encode writes a hello: a version byte, the chain (length-prefixed),
// a count of revocations and each one, length-prefixed.
func (h hello) encode() []byte {
	b := []byte{helloVersion}
	b = appendBytes(b, h.chain.Encode())
	b = appendUvarint(b, uint64(len(h.revs)))
	for i := range h.revs {
		b = appendBytes(b, h.revs[i].Encode())
	}
	return b
}

func decodeHello(b []byte) (hello, error) {
	if len(b) == 0 || b[0] != helloVersion {
		return hello{}, errors.New("admission message: unknown version")
	}
	b = b[1:]
	cb, b, err := readBytes(b, "chain")
	if err != nil {
		return hello{}, err
	}
	ch, err := auth.DecodeChain(cb)
	if err != nil {
		return hello{}, fmt.Errorf("admission message: %w", err)
	}
	n, b, err := readUvarint(b, "revocation count")
	if err != nil {
		return hello{}, err
	}
	if n > auth.MaxRevocations {
		return hello{}, fmt.Errorf("admission message: %d revocations, at most %d", n, auth.MaxRevocations)
	}
	h := hello{chain: ch}
	for i := range n {
		var rb []byte
		if rb, b, err = readBytes(b, fmt.Sprintf("revocation %d", i)); err != nil {
			return hello{}, err
		}
		r, err := auth.DecodeRevocation(rb)
		if err != nil {
			return hello{}, fmt.Errorf("admission message: revocation %d: %w", i, err)
		}
		h.revs = append(h.revs, r)
	}
	if len(b) > 0 {
		return hello{}, fmt.Errorf("admission message: %d bytes after the end", len(b))
	}
	return h, nil
}
