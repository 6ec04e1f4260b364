package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchCPU(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, path, want string
	}{
		{"no file given", "", ""},
		{"missing file", filepath.Join(dir, "absent.txt"), ""},
		{"no cpu line", write("none.txt", "goos: linux\nPASS\n"), ""},
		{"cpu line", write("cpu.txt", "tmpdir: /dev/shm/x (tmpfs)\ngoos: linux\ncpu: Oxide Virtual Turin-like Processor             \nBenchmarkX 1 2 ns/op\n"), "Oxide Virtual Turin-like Processor"},
		{"last line without newline", write("last.txt", "goos: linux\ncpu: Some CPU"), "Some CPU"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := benchCPU(c.path); got != c.want {
				t.Fatalf("benchCPU(%q) = %q, want %q", c.path, got, c.want)
			}
		})
	}
	// The machine line names Go's CPU only where it adds something.
	if m := machine(write("odd.txt", "cpu: A CPU name no cpuinfo has\n")); !strings.Contains(m, "; Go names it A CPU name no cpuinfo has") {
		t.Fatalf("machine line %q does not name the benchmark's CPU", m)
	}
	if m := machine(""); strings.Contains(m, "Go names it") {
		t.Fatalf("machine line %q names a CPU without a benchmark file", m)
	}
}
