package netns

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSitesNAT: an edge reaches the public network, seen there as its
// router's address; nothing from the public side reaches the edge
// unsolicited, over TCP or UDP; and every namespace is gone after the
// test, also one that failed.
func TestSitesNAT(t *testing.T) {
	var made []string
	t.Run("topology", func(t *testing.T) {
		n := New(t)
		s := n.Sites(2)
		made = append(made, s.Public, s.Edges[0], s.Routers[1])
		var ln net.Listener
		if err := n.Do(s.Public, func() (err error) { ln, err = net.Listen("tcp", s.PublicAddr+":0"); return }); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		got := make(chan string, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			got <- c.RemoteAddr().String()
			c.Close()
		}()
		var c net.Conn
		if err := n.Do(s.Edges[0], func() (err error) { c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second); return }); err != nil {
			t.Fatalf("edge 1 cannot reach the public network: %v", err)
		}
		c.Close()
		if from := <-got; !strings.HasPrefix(from, s.RouterAddrs[0]+":") {
			t.Errorf("the public side saw %s, want router 1's address %s (masquerade)", from, s.RouterAddrs[0])
		}
		// unsolicited TCP from the public side
		var eln net.Listener
		if err := n.Do(s.Edges[0], func() (err error) { eln, err = net.Listen("tcp", s.EdgeAddrs[0]+":0"); return }); err != nil {
			t.Fatal(err)
		}
		defer eln.Close()
		if err := n.Do(s.Public, func() error {
			c, err := net.DialTimeout("tcp", eln.Addr().String(), time.Second)
			if err == nil {
				c.Close()
				t.Errorf("the public side dialled edge 1 at %s unsolicited", eln.Addr())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// nor from the other edge site
		if err := n.Do(s.Edges[1], func() error {
			c, err := net.DialTimeout("tcp", eln.Addr().String(), time.Second)
			if err == nil {
				c.Close()
				t.Errorf("edge 2 dialled edge 1 at %s unsolicited", eln.Addr())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// unsolicited UDP
		var pc net.PacketConn
		if err := n.Do(s.Edges[0], func() (err error) { pc, err = net.ListenPacket("udp", s.EdgeAddrs[0]+":0"); return }); err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		if err := n.Do(s.Public, func() error {
			c, err := net.Dial("udp", pc.LocalAddr().String())
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("hello"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		pc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, _, err := pc.ReadFrom(make([]byte, 16)); err == nil {
			t.Errorf("a UDP packet from the public side reached edge 1 unsolicited")
		}
	})
	if len(made) == 0 {
		return // skipped
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range made {
		if strings.Contains(string(out), ns) {
			t.Errorf("namespace %s left behind", ns)
		}
	}
}
