package netns

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Net is a set of network namespaces a test made, all removed by its
// cleanup (also when the test fails or panics). Every address it hands
// out lies inside these namespaces; nothing is added to the host's.
type Net struct {
	t      testing.TB
	prefix string
	spaces []string
}

var seq atomic.Int64

// Usable says why network namespaces cannot be made here, or "" when
// they can: they need root, the ip tool (iproute2) and nft (nftables).
func Usable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not installed (make test installs iproute2 and nftables)"
		}
	}
	return ""
}

// New starts an empty set of namespaces for t, or skips t naming why
// namespaces cannot be made here. A kernel without network namespaces
// skips too; any other failure fails the test.
func New(t testing.TB) *Net {
	t.Helper()
	if why := Usable(); why != "" {
		t.Skip(why)
	}
	n := &Net{t: t, prefix: fmt.Sprintf("ag%d-%d", os.Getpid()%100000, seq.Add(1))}
	t.Cleanup(n.remove)
	probe := n.prefix + "-probe"
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here: %v: %s", err, bytes.TrimSpace(out))
	}
	_ = exec.Command("ip", "netns", "del", probe).Run()
	return n
}

// Space makes namespace name (its full name is returned: the test's
// prefix, a dash, name) with its loopback up.
func (n *Net) Space(name string) string {
	n.t.Helper()
	full := n.prefix + "-" + name
	n.ip("", "netns", "add", full)
	n.spaces = append(n.spaces, full)
	n.ip(full, "link", "set", "lo", "up")
	return full
}

// Link joins namespaces a and b by a veth pair, ifaces ia in a and ib in
// b, with the addresses (CIDR form) given; an empty address leaves that
// end unaddressed (to be enslaved to a bridge).
func (n *Net) Link(a, ia, addrA, b, ib, addrB string) {
	n.t.Helper()
	n.ip(a, "link", "add", ia, "type", "veth", "peer", "name", ib, "netns", b)
	for _, e := range []struct{ ns, iface, addr string }{{a, ia, addrA}, {b, ib, addrB}} {
		if e.addr != "" {
			n.ip(e.ns, "addr", "add", e.addr, "dev", e.iface)
		}
		n.ip(e.ns, "link", "set", e.iface, "up")
	}
}

// Bridge makes bridge br in ns with address addr (CIDR) and enslaves
// ifaces to it.
func (n *Net) Bridge(ns, br, addr string, ifaces ...string) {
	n.t.Helper()
	n.ip(ns, "link", "add", br, "type", "bridge")
	n.ip(ns, "addr", "add", addr, "dev", br)
	n.ip(ns, "link", "set", br, "up")
	for _, i := range ifaces {
		n.ip(ns, "link", "set", i, "master", br)
	}
}

// Route adds a default route in ns via gw.
func (n *Net) Route(ns, gw string) {
	n.t.Helper()
	n.ip(ns, "route", "add", "default", "via", gw)
}

// NAT makes ns a home router: it forwards, masquerades what leaves by
// out (the public side) as its own address, lets back in only replies
// to connections from inside, and drops every unsolicited packet from
// the public side — TCP and UDP alike, so QUIC cannot slip through.
func (n *Net) NAT(ns, out string) {
	n.t.Helper()
	n.run(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	rules := fmt.Sprintf(`table ip agora_nat {
	chain nat_out {
		type nat hook postrouting priority srcnat; policy accept;
		oifname %q masquerade
	}
	chain guard_forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		iifname != %q accept
	}
	chain guard_input {
		type filter hook input priority filter; policy accept;
		iifname %q ct state new drop
	}
}
`, out, out, out)
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if b, err := cmd.CombinedOutput(); err != nil {
		n.t.Fatalf("netns: nft in %s: %v: %s", ns, err, bytes.TrimSpace(b))
	}
}

// Command is cmd run in namespace ns (through `ip netns exec`).
func (n *Net) Command(ns, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Do runs fn on an OS thread moved into namespace ns: sockets fn opens
// belong to ns and keep working from any goroutine afterwards.
func (n *Net) Do(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked: if moving it back failed it must
		// die with the goroutine rather than serve others in ns.
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: enter %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: leave %s: %w", ns, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func (n *Net) ip(ns string, args ...string) {
	n.t.Helper()
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("netns: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
	}
}

func (n *Net) run(ns, name string, args ...string) {
	n.t.Helper()
	if b, err := n.Command(ns, name, args...).CombinedOutput(); err != nil {
		n.t.Fatalf("netns: %s %s in %s: %v: %s", name, strings.Join(args, " "), ns, err, bytes.TrimSpace(b))
	}
}

// remove deletes every namespace made, which deletes the interfaces,
// bridges and rules inside them; processes still running in them keep
// them alive until they exit, and the test's own cleanups stop those.
func (n *Net) remove() {
	for i := len(n.spaces) - 1; i >= 0; i-- {
		if b, err := exec.Command("ip", "netns", "del", n.spaces[i]).CombinedOutput(); err != nil {
			n.t.Logf("netns: removing %s: %v: %s", n.spaces[i], err, bytes.TrimSpace(b))
		}
	}
	n.spaces = nil
}
