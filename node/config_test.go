package node

import (
	"net"
	"strings"
	"testing"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// TestDefaultsAreLoopback: with no flags, nothing listens beyond
// 127.0.0.0/8 and no bootstrap peer is configured.
func TestDefaultsAreLoopback(t *testing.T) {
	c := Config{}.withDefaults()
	for _, s := range c.Listen {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			t.Fatal(err)
		}
		if !manet.IsIPLoopback(a) {
			t.Fatalf("default listen address %s is not loopback", s)
		}
	}
	host, _, err := net.SplitHostPort(c.API)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("default API %q is not loopback", c.API)
	}
	if len(c.Bootstrap) != 0 || c.MDNS {
		t.Fatalf("defaults must not bootstrap anywhere or enable mDNS: %+v", c)
	}
}

func TestParseLabel(t *testing.T) {
	for _, c := range []struct{ in, k, v, err string }{
		{in: "zone=a", k: "zone", v: "a"},
		{in: "empty=", k: "empty", v: ""},
		{in: "novalue", err: "key=value"},
		{in: "=x", err: "key=value"},
	} {
		k, v, err := ParseLabel(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("ParseLabel(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || k != c.k || v != c.v {
			t.Fatalf("ParseLabel(%q) = %q, %q, %v", c.in, k, v, err)
		}
	}
}
