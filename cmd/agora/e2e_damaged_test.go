package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestDamagedStore (issue 41, done-when 4): a node accepts 5 jobs and is
// killed with SIGKILL; then 4 KiB of random bytes are written into one
// of its database's files — the write-ahead log (a .mem file), the value
// log (a .vlog file, where records of 64 KiB and more live) or the
// MANIFEST. Restarted, the node either refuses to start with an error
// naming the damaged file, or comes back holding all 5 jobs: never fewer
// in silence. Before the job ledger, a damaged write-ahead log came back
// holding none of them, and said nothing.
func TestDamagedStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		glob  string // the file damaged, in db/
		large bool   // records large enough for the value log
		names string // what the refusal must name
	}{
		{"write-ahead log", "*.mem", false, ".mem"},
		{"value log", "*.vlog", true, ".vlog"},
		{"manifest", "MANIFEST", false, "MANIFEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			p := startNode(t, data)
			var ids []string
			for i := range 5 {
				env := ""
				if tc.large {
					// 2 × 40 KiB of environment: an 80 KiB record.
					env = fmt.Sprintf(`, "env": {"PAD": %q}`, strings.Repeat("x", 40<<10))
				}
				spec := writeFile(t, fmt.Sprintf("j%d.json", i), fmt.Sprintf(
					`{"name": "keep-%d", "tasks": [{"name": "a", "command": ["true"]%[2]s}, {"name": "b", "command": ["true"]%[2]s}]}`, i, env))
				o, e, code := agora(t, "submit", "--api", p.api, "--wait", spec)
				if code != 0 {
					t.Fatalf("submit %d: exit %d: %s %s", i, code, o, e)
				}
				ids = append(ids, strings.TrimSpace(o))
			}
			p.kill()
			files, _ := filepath.Glob(filepath.Join(data, "db", tc.glob))
			if len(files) == 0 {
				ls, _ := os.ReadDir(filepath.Join(data, "db"))
				var names []string
				for _, e := range ls {
					names = append(names, e.Name())
				}
				t.Fatalf("no %s in the killed node's database: %v", tc.glob, names)
			}
			damage(t, files[0])

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			traversable(t, data)
			_ = os.Remove(filepath.Join(data, "api.addr")) // left by the killed run
			cmd := exec.CommandContext(ctx, agoraBin, "node", "--data", data, "--api", "127.0.0.1:0", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-nvml")
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var api string
			waitfor.Every(t, 20*time.Second, apiPoll, "the node to refuse to start or to serve its API", func() bool {
				select {
				case err := <-done:
					done <- err
					return true
				default:
				}
				b, err := os.ReadFile(filepath.Join(data, "api.addr"))
				api = strings.TrimSpace(string(b))
				return err == nil && api != ""
			})
			select {
			case err := <-done:
				msg := out.String()
				if err == nil || !strings.Contains(msg, "damaged") || !strings.Contains(msg, tc.names) {
					t.Fatalf("the node exited (%v) without naming the damaged %s:\n%s", err, tc.names, msg)
				}
				t.Logf("refused: %s", lastLine(msg))
			default:
				// It came back: it must hold every job.
				defer func() { _ = cmd.Process.Kill() }()
				for _, id := range ids {
					o, _, code := agora(t, "status", "--api", api, "--json", id)
					var st struct{ State string }
					if code != 0 || json.Unmarshal([]byte(o), &st) != nil || st.State != "succeeded" {
						t.Errorf("job %s after the damage: exit %d %s", id, code, o)
					}
				}
				if !t.Failed() {
					t.Logf("came back holding all %d jobs", len(ids))
				}
			}
		})
	}
}

// damage writes 4 KiB of random bytes into the file at path, past its
// first 64 bytes (headers, magic), or over the middle of a smaller file.
func damage(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(64)
	if st.Size() < off+4096 {
		off = st.Size() / 2
	}
	junk := make([]byte, 4096)
	rand.Read(junk)
	if st.Size() < off+int64(len(junk)) {
		junk = junk[:st.Size()-off]
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(junk, off); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d random bytes at offset %d of %s (%d bytes)", len(junk), off, filepath.Base(path), st.Size())
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
