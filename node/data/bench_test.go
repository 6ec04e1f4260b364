package data

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/runtime/checkpoint"
)

// BenchmarkDataTransfer (issue 23, done-when 5) moves a 256 MiB output
// from one node to another over the data protocol (libp2p on loopback:
// Noise, yamux; every chunk's hash checked and stored in the receiver's
// badger store) and, in the same run, the same bytes over a plain TCP
// connection on loopback into a file in the same file system (1 MiB
// reads, as netcat into a file would do): both land the bytes on the
// receiver's disk. It reports both rates and their ratio, and fails
// below half the plain copy's rate (the goal).
//
//	go test -run '^$' -bench DataTransfer -benchtime 3x ./node/data/
func BenchmarkDataTransfer(b *testing.B) {
	const size = 256 << 20
	src, dst := newNode(b, Options{}), newNode(b, Options{})
	if err := src.h.Connect(context.Background(), peer.AddrInfo{ID: dst.h.ID(), Addrs: dst.h.Addrs()}); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i*2654435761>>13) ^ byte(i>>17)
	}
	if err := os.WriteFile(filepath.Join(dir, "out.bin"), body, 0o600); err != nil {
		b.Fatal(err)
	}
	m, _, err := checkpoint.SnapshotPaths(dir, []string{"out.bin"}, checkpoint.Meta{Job: "j", Task: "t", Created: time.Now()}, src.svc.Store())
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := checkpoint.EncodeManifest(m)
	id, err := src.svc.Store().Keep(raw, Record{Kind: KindOutput, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	tcpCopy(b, body, filepath.Join(b.TempDir(), "warm")) // the page cache warmed for both
	var agora, plain, mem time.Duration
	b.ResetTimer()
	for i := range b.N {
		// A fresh receiver store each round, so every byte moves.
		if i > 0 {
			b.StopTimer()
			dst.h.Close()
			dst = newNode(b, Options{})
			if err := src.h.Connect(context.Background(), peer.AddrInfo{ID: dst.h.ID(), Addrs: dst.h.Addrs()}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		t0 := time.Now()
		if _, err := dst.svc.Fetch(context.Background(), id, []peer.ID{src.h.ID()}, Record{Kind: KindCache, Expires: time.Now().Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
		agora += time.Since(t0)
		t0 = time.Now()
		tcpCopy(b, body, filepath.Join(b.TempDir(), "copy"))
		plain += time.Since(t0)
		t0 = time.Now()
		tcpCopy(b, body, "")
		mem += time.Since(t0)
	}
	b.StopTimer()
	rate := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	ratio := rate(agora) / rate(plain)
	b.ReportMetric(rate(agora), "agora-MB/s")
	b.ReportMetric(rate(plain), "tcp-MB/s")
	b.ReportMetric(rate(mem), "tcp-to-memory-MB/s")
	b.ReportMetric(ratio, "ratio")
	if ratio < 0.5 {
		b.Fatalf("the data protocol moved %.0f MB/s, %.2f× a plain TCP copy's %.0f MB/s; the goal is 0.5×", rate(agora), ratio, rate(plain))
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// tcpCopy sends body over a loopback TCP connection into a file ("":
// nowhere, the network alone).
func tcpCopy(b *testing.B, body []byte, file string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		var f io.WriteCloser = nopCloser{io.Discard}
		if file != "" {
			if f, err = os.Create(file); err != nil {
				done <- err
				return
			}
		}
		_, err = io.CopyBuffer(f, c, make([]byte, 1<<20))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Write(body); err != nil {
		b.Fatal(err)
	}
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
