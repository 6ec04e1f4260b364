package netns

import "fmt"

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

// Sites makes a public network and k edge sites behind NAT.
func (n *Net) Sites(k int) Sites {
	n.t.Helper()
	s := Sites{Public: n.Space("pub"), PublicAddr: "192.0.0.129"}
	var ports []string
	for i := range k {
		r, e := n.Space(fmt.Sprintf("r%d", i+1)), n.Space(fmt.Sprintf("e%d", i+1))
		raddr := fmt.Sprintf("192.0.0.%d", 141+i)
		gw, eaddr := fmt.Sprintf("10.78.%d.1", i+1), fmt.Sprintf("10.78.%d.2", i+1)
		port := fmt.Sprintf("pub%d", i+1)
		n.Link(s.Public, port, "", r, "wan", raddr+"/25")
		n.Link(r, "lan", gw+"/24", e, "eth0", eaddr+"/24")
		n.Route(e, gw)
		n.NAT(r, "wan")
		ports = append(ports, port)
		s.Routers, s.Edges = append(s.Routers, r), append(s.Edges, e)
		s.RouterAddrs, s.EdgeAddrs = append(s.RouterAddrs, raddr), append(s.EdgeAddrs, eaddr)
	}
	n.Bridge(s.Public, "br0", s.PublicAddr+"/25", ports...)
	for i := range k {
		n.ip(s.Public, "route", "add", fmt.Sprintf("10.78.%d.0/24", i+1), "via", s.RouterAddrs[i])
	}
	return s
}
