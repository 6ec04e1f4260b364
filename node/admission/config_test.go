package admission

import (
	"net"
	"strings"
	"testing"

	ma "github.com/multiformats/go-multiaddr"
)

// TestCheckExposure: a node without an authority may listen on loopback
// only; every other address, the unspecified ones first, is refused
// naming --trust and --insecure. (Checked here, on the addresses alone,
// so that no test ever binds a non-loopback address.)
func TestCheckExposure(t *testing.T) {
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"/ip4/127.0.0.1/tcp/4001", true},
		{"/ip4/127.0.0.1/udp/4001/quic-v1", true},
		{"/ip6/::1/tcp/0", true},
		{"/ip4/" + net.IPv4zero.String() + "/tcp/4001", false}, // never listened on: the check alone
		{"/ip6/::/tcp/0", false},
		{"/ip4/10.1.2.3/tcp/4001", false},
		{"/dns4/example.com/tcp/4001", false},
	} {
		err := CheckExposure([]ma.Multiaddr{ma.StringCast(c.addr)})
		if c.ok != (err == nil) {
			t.Errorf("%s: %v, want allowed %v", c.addr, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "--trust") || !strings.Contains(err.Error(), "--insecure")) {
			t.Errorf("%s: %q does not name --trust and --insecure", c.addr, err)
		}
	}
}
