// Package containertest builds the OCI images the container tests run:
// a root file system of Debian's busybox-static, imported into the
// host's engine (podman or docker, given by its path) under a tag of the
// test's own. No registry is involved. It does not import package
// runtime, whose own tests use it.
package containertest

import (
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Applets are the busybox programs the image has under /bin.
var Applets = []string{"sh", "echo", "cat", "sleep", "sha256sum", "ls", "id", "env", "head", "tail", "seq", "dd", "yes", "test", "touch", "mkdir", "wc"}

// staticBusybox is the path of a statically linked busybox, or "".
func staticBusybox() string {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p
		}
	}
	return ""
}

// Busybox imports a busybox image under a tag of its own and returns the
// tag and the image's ID; the image is removed when the test ends. It
// skips the test when the host has no static busybox.
func Busybox(t testing.TB, engine string) (ref, id string) {
	t.Helper()
	bb := staticBusybox()
	if bb == "" {
		t.Skip("no statically linked busybox (Debian's busybox-static; make testdeps installs it as root)")
	}
	root := t.TempDir()
	for _, d := range []string{"bin", "tmp", "dev", "proc", "sys", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range Applets {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	tar := filepath.Join(t.TempDir(), "rootfs.tar")
	if out, err := exec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	var b [6]byte
	rand.Read(b[:])
	ref = "localhost/agora-test/busybox:" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"import", "--change", "ENV PATH=/bin", tar, ref}
	if out, err := exec.CommandContext(ctx, engine, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s import: %v: %s", engine, err, out)
	}
	t.Cleanup(func() { Remove(engine, ref) })
	out, err := exec.CommandContext(ctx, engine, "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		t.Fatalf("%s image inspect %s: %v", engine, ref, err)
	}
	id = strings.TrimSpace(string(out))
	if !strings.HasPrefix(id, "sha256:") {
		id = "sha256:" + id
	}
	return ref, id
}

// Remove deletes the image ref names (errors ignored: it may be gone).
func Remove(engine, ref string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = exec.CommandContext(ctx, engine, "rmi", "--force", ref).Run()
}

// Tag gives the image id a further tag, removed when the test ends.
func Tag(t testing.TB, engine, id, ref string) {
	t.Helper()
	if out, err := exec.Command(engine, "tag", id, ref).CombinedOutput(); err != nil {
		t.Fatalf("%s tag: %v: %s", engine, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command(engine, "rmi", ref).Run() })
}
