package release

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRelease (issue 47, done-when 1): make release builds agora for
// linux/amd64 and linux/arm64; the arm64 one is an aarch64 ELF; the one
// for this machine runs `agora version`, naming the checkout's commit;
// SHA256SUMS holds every file's hash; the man pages and the unit are
// there.
func TestMakeRelease(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this host")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "-C", root, "release", "DIST="+dist)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("%s", out)

	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		f, err := elf.Open(filepath.Join(dist, "agora-linux-"+arch))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if f.Machine != machine || f.Class != elf.ELFCLASS64 {
			t.Errorf("agora-linux-%s is a %v %v ELF", arch, f.Class, f.Machine)
		}
		f.Close()
	}
	if _, err := exec.LookPath("file"); err == nil {
		desc, _ := exec.Command("file", filepath.Join(dist, "agora-linux-arm64")).Output()
		if !strings.Contains(string(desc), "ARM aarch64") {
			t.Errorf("file says: %s", desc)
		}
	}

	host := map[string]string{"x86_64": "amd64", "aarch64": "arm64"}[uname(t)]
	if host == "" {
		t.Fatalf("no release binary for this machine (%s)", uname(t))
	}
	v, err := exec.Command(filepath.Join(dist, "agora-linux-"+host), "version", "--json").Output()
	if err != nil {
		t.Fatalf("agora version: %v", err)
	}
	var info struct{ Version, Commit string }
	if err := json.Unmarshal(v, &info); err != nil {
		t.Fatalf("agora version --json: %v: %s", err, v)
	}
	if head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		if want := strings.TrimSpace(string(head)); info.Commit != want {
			t.Errorf("agora version names commit %q, the checkout is at %s", info.Commit, want)
		}
	} else if info.Commit == "" || info.Commit == "unknown" {
		t.Errorf("agora version names no commit: %s", v)
	}

	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", name)
		}
		listed++
	}
	for _, want := range []string{"agora-linux-amd64", "agora-linux-arm64", "agora.service", "man/agora.1", "man/agora-node.1"} {
		if !bytes.Contains(sums, []byte("  "+want+"\n")) {
			t.Errorf("SHA256SUMS does not list %s", want)
		}
	}
	t.Logf("%d files in SHA256SUMS", listed)
}

func uname(t *testing.T) string {
	out, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
