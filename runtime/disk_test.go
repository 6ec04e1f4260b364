package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskLimitKills: a task that keeps writing past its disk limit is
// killed, and its result is a failure naming the limit; one that stays
// under it ends as it would.
func TestDiskLimitKills(t *testing.T) {
	r := newTestRunner(t, Options{})
	out, done := newRecorder(), newDone()
	spec := testSpec(t, sh(`i=0; while :; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.01; done`))
	spec.Disk = 4 << 20
	if err := r.Start("disk", spec, out, done.fn); err != nil {
		t.Fatal(err)
	}
	res := done.wait(t, 20*time.Second)
	if res.Cancelled || res.TimedOut || res.ExitCode != -1 || !strings.Contains(res.Reason, "over its disk limit") || !strings.Contains(res.Reason, "4.0 MiB") {
		t.Fatalf("result %+v: want a failure naming the disk limit", res)
	}

	under, done2 := testSpec(t, sh(`head -c 1048576 /dev/zero > f; sleep 1.2`)), newDone()
	under.Disk = 4 << 20
	if err := r.Start("disk-ok", under, newRecorder(), done2.fn); err != nil {
		t.Fatal(err)
	}
	if res := done2.wait(t, 20*time.Second); res.ExitCode != 0 {
		t.Fatalf("a task under its limit: %+v", res)
	}
}

// TestDirBytes counts blocks, a hard-linked file once.
func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if n := DirBytes(dir); n < 1<<20 || n > 1<<20+64<<10 {
		t.Fatalf("DirBytes %d for one 1 MiB file linked twice", n)
	}
}
