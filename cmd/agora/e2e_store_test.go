package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestFullDisk (issue 22): a node whose data directory's file system
// fills up refuses submissions with a clear error (exit 1), shows the
// degraded state on /metrics, loses no job it accepted before, and takes
// work again once space is freed, without a restart. Before, badger
// wrote into a sparse memory-mapped log on the full file system and the
// node died of SIGBUS.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=160m", "agora-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	data := filepath.Join(mnt, "data")
	p := startNode(t, data)
	spec := writeFile(t, "job.json", `{"name": "small", "tasks": [{"name": "t", "command": ["true"]}]}`)
	submit := func() (string, string, int) { return agora(t, "submit", "--api", p.api, "--wait", "--json", spec) }
	out, errOut, code := submit()
	if code != 0 {
		t.Fatalf("first job: %d %s %s", code, out, errOut)
	}
	first := jobID(out)

	// Fill the file system to the last byte.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	_, errOut, code = submit()
	if code != 1 || !strings.Contains(errOut, "cannot store") {
		t.Fatalf("a submission on a full disk: exit %d, stderr %q; want 1 saying the node cannot store it", code, errOut)
	}
	if m := metric(t, p.api, "agora_degraded"); m != "1" {
		t.Fatalf("agora_degraded %q on a full disk", m)
	}
	if out, _, code := agora(t, "status", "--api", p.api, "--json", first); code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("the job accepted before, on a full disk: %d %s", code, out)
	}

	// Space back: work again, no restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitfor.Every(t, 10*time.Second, apiPoll, "agora_degraded 0", func() bool { return metric(t, p.api, "agora_degraded") == "0" })
	out, errOut, code = submit()
	if code != 0 {
		t.Fatalf("a submission once space is back: %d %s %s", code, out, errOut)
	}
	second := jobID(out)

	// And both jobs survive a restart.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = startNode(t, data)
	for _, id := range []string{first, second} {
		if out, _, code := agora(t, "status", "--api", p.api, "--json", id); code != 0 || !strings.Contains(out, "succeeded") {
			t.Fatalf("job %s after a restart: %d %s", id, code, out)
		}
	}
}

// metric reads one unlabelled series from a node's /metrics.
func metric(t *testing.T, api, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
