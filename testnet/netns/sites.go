package netns

import (
	"fmt"
	"strings"
)

// Sites is a public network and edge sites behind NAT routers:
//
//   - namespace Public holds bridge br0 at PublicAddr (192.0.0.129/25),
//     the "internet" of the test, where public nodes run;
//   - router i (Routers[i]) is at RouterAddrs[i] (192.0.0.(141+i)) on
//     that bridge and masquerades for its edge site, dropping every
//     unsolicited packet from the public side;
//   - edge namespace Edges[i] is at EdgeAddrs[i] (10.78.(1+i).2) behind
//     it, its default route through the router.
//
// The public side uses 192.0.0.128/25, part of IANA's block for protocol
// assignments: routed nowhere on the internet, yet not in the private or
// unroutable ranges libp2p's AutoNAT skips, so AutoNAT really probes
// these addresses (it never tests RFC 1918 ones). Nothing leaves the
// test's namespaces whatever the addresses.
//
// Public has routes to the edge subnets through their routers, so a
// packet from a public node to an edge reaches its router, which drops
// it unless it answers a connection from inside: what a home router
// does, with no help from the addresses being unroutable.
type Sites struct {
	Public, PublicAddr string
	Routers, Edges     []string
	RouterAddrs        []string
	EdgeAddrs          []string
}

// Sites makes a public network and k edge sites behind NAT, one edge
// namespace each.
func (n *Net) Sites(k int) Sites {
	n.t.Helper()
	s := Sites{Public: n.Space("pub"), PublicAddr: "192.0.0.129"}
	n.Bridge(s.Public, "br0", s.PublicAddr+"/25")
	for range k {
		n.AddSite(&s, 1)
	}
	return s
}

// AddSite adds to s one more NAT'd site with m edge namespaces on one
// LAN (a bridge in the router) behind one router, and returns the edges
// and their addresses. Its router is s.Routers' next, at the next public
// address; its LAN is 10.78.(index).0/24.
func (n *Net) AddSite(s *Sites, m int) (edges, addrs []string) {
	n.t.Helper()
	i := len(s.Routers)
	r := n.Space(fmt.Sprintf("r%d", i+1))
	raddr, gw := fmt.Sprintf("192.0.0.%d", 141+i), fmt.Sprintf("10.78.%d.1", i+1)
	port := fmt.Sprintf("pub%d", i+1)
	n.Link(s.Public, port, "", r, "wan", raddr+"/25")
	n.ip(s.Public, "link", "set", port, "master", "br0")
	var lan []string
	for k := range m {
		e := n.Space(fmt.Sprintf("e%d-%d", i+1, k+1))
		eaddr := fmt.Sprintf("10.78.%d.%d", i+1, k+2)
		p := fmt.Sprintf("lan%d", k+1)
		n.Link(r, p, "", e, "eth0", eaddr+"/24")
		lan = append(lan, p)
		edges, addrs = append(edges, e), append(addrs, eaddr)
	}
	n.Bridge(r, "lan", gw+"/24", lan...)
	for _, e := range edges {
		n.Route(e, gw)
	}
	n.NAT(r, "wan")
	n.ip(s.Public, "route", "add", fmt.Sprintf("10.78.%d.0/24", i+1), "via", raddr)
	s.Routers, s.RouterAddrs = append(s.Routers, r), append(s.RouterAddrs, raddr)
	s.Edges, s.EdgeAddrs = append(s.Edges, edges...), append(s.EdgeAddrs, addrs...)
	return edges, addrs
}

// Cut drops everything router forwards, both ways, until Mend: the site
// behind it is cut off from the public network.
func (n *Net) Cut(router string) {
	n.t.Helper()
	cmd := n.Command(router, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader("table ip agora_cut {\n\tchain cut_forward {\n\t\ttype filter hook forward priority -50; policy drop;\n\t}\n}\n")
	if b, err := cmd.CombinedOutput(); err != nil {
		n.t.Fatalf("netns: cut %s: %v: %s", router, err, b)
	}
}

// Mend undoes Cut.
func (n *Net) Mend(router string) {
	n.t.Helper()
	n.run(router, "nft", "delete", "table", "ip", "agora_cut")
}
